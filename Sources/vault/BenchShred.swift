import Foundation
@_spi(Bench) import VaultCore

/// `vault bench --only shred`: the DRM-lite figures of issue 7.
///
/// - crypto-shredding a 1 MiB and a `size` (default 1 GiB) asset: the key destruction (one
///   index transaction with `secure_delete`, plus the WAL checkpoint) timed apart from the
///   file's unlink; goal: both under 10 ms and within 2× of each other;
/// - the lease check's cost per warm read: 1 MiB random reads (a player's range request;
///   the server's block) from a warm reader, each preceded by `authorizeRead` as every
///   loader session and server request is, on a leased and an unleased copy of the same
///   bytes, alternated in the same run; plus the check's own time.
struct ShredBench {
  let directory: String
  let size: Int
  let runs: Int
  var reads = 2_000
  let status: (String) -> Void

  func run() throws -> [BenchRow] {
    var rows: [BenchRow] = []
    let vault = try Vault.create(at: directory + "/shred", masterKey: try DemoKey.load())
    let small = 1 << 20
    let input = try BenchInput()
    let smallSource = directory + "/small.bin"
    try Data(input.bytes(at: 0, count: small)).write(to: URL(fileURLWithPath: smallSource))
    let largeSource = directory + "/large.bin"
    try writeInput(input, to: largeSource, count: size)

    var keyTimes: [[Double]] = [[], []]
    var unlinkTimes: [[Double]] = [[], []]
    for round in 1...runs {
      // Both assets are imported first and the disk left to settle, so neither timed key
      // destruction competes with the writeback of the import just before it.
      var ids: [AssetID] = []
      for (k, source) in [smallSource, largeSource].enumerated() {
        status(
          "shred round \(round) of \(runs): importing \(k == 0 ? "1 MiB" : formatBytes(UInt64(size)))"
        )
        let name = "asset-\(k)-\(round)"
        try vault.importFile(at: source, name: name, lease: Lease(maxPlays: 3))
        ids.append(try vault.resolve(name))
      }
      sync()
      usleep(500_000)
      for k in round % 2 == 0 ? [0, 1] : [1, 0] {
        let started = BenchClock.now()
        let path = try vault.benchDestroyKey(ids[k])
        let destroyed = BenchClock.now()
        unlink(path)
        let parent = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY)
        if parent >= 0 {
          fsync(parent)
          close(parent)
        }
        keyTimes[k].append(destroyed - started)
        unlinkTimes[k].append(BenchClock.now() - destroyed)
        usleep(200_000)
      }
    }
    let key = keyTimes.map { BenchFormat.quantile($0.sorted(), 0.5) }
    let unlink = unlinkTimes.map { BenchFormat.quantile($0.sorted(), 0.5) }
    let labels = ["1 MiB", formatBytes(UInt64(size))]
    for k in 0..<2 {
      rows.append(
        BenchRow(
          measure:
            "Shred \(labels[k]) asset: key destruction (transaction + WAL checkpoint, median of \(runs))",
          result: millis(key[k]), goal: "< 10 ms", met: key[k] < 0.010))
      rows.append(
        BenchRow(
          measure: "Shred \(labels[k]) asset: then unlink + directory fsync (median of \(runs))",
          result: millis(unlink[k])))
    }
    let ratio = max(key[0], key[1]) / max(min(key[0], key[1]), 1e-9)
    rows.append(
      BenchRow(
        measure: "Key destruction, \(labels[1]) ÷ 1 MiB",
        result: BenchFormat.ratio(key[1] / key[0]),
        goal: "within 2× either way", met: ratio <= 2))
    rows += try leaseOverhead(vault, source: largeSource)
    try? FileManager.default.removeItem(atPath: vault.directory)
    return rows
  }

  /// Random 1 MiB warm reads, each after a lease check, leased vs unleased, interleaved.
  private func leaseOverhead(_ vault: Vault, source: String) throws -> [BenchRow] {
    status("lease check: \(reads) warm reads per asset")
    try vault.importFile(at: source, name: "free")
    try vault.importFile(
      at: source, name: "leased",
      lease: Lease(notAfter: Date().addingTimeInterval(86_400), maxPlays: 1_000_000))
    let ids = [try vault.resolve("free"), try vault.resolve("leased")]
    let readers = try ids.map { try vault.reader(for: $0) }
    let count = 1 << 20
    let span = UInt64(size - count)
    var generator = SystemRandomNumberGenerator()
    let offsets = (0..<reads).map { _ in
      // Past the first chunk: a seek within a play, so nothing is written.
      UInt64(65_536) + UInt64.random(in: 0..<(span - 65_536), using: &generator)
    }
    // Warm: every chunk the reads touch is in the page cache before timing.
    for k in 0..<2 {
      for offset in offsets.prefix(200) { _ = try readers[k].read(offset: offset, count: count) }
    }
    var readSeconds: [Double] = [0, 0]
    var checkSeconds: [Double] = [0, 0]
    let batch = 50
    var start = 0
    while start < offsets.count {
      let slice = offsets[start..<min(start + batch, offsets.count)]
      for k in 0..<2 {
        let began = BenchClock.now()
        for offset in slice {
          try vault.authorizeRead(ids[k], from: offset)
          _ = try readers[k].read(offset: offset, count: count)
        }
        readSeconds[k] += BenchClock.now() - began
        let checkBegan = BenchClock.now()
        for offset in slice { try vault.authorizeRead(ids[k], from: offset) }
        checkSeconds[k] += BenchClock.now() - checkBegan
      }
      start += batch
    }
    // The same checks with the reuse window defeated: what the first check in a second
    // costs (one joined index read, plus an HMAC for a leased asset).
    var coldSeconds: [Double] = [0, 0]
    for offset in offsets.prefix(reads) {
      for k in 0..<2 {
        vault.benchForgetRecentLeases()
        let began = BenchClock.now()
        try vault.authorizeRead(ids[k], from: offset)
        coldSeconds[k] += BenchClock.now() - began
      }
    }
    let bytes = Double(count * reads)
    let change = readSeconds[1] / readSeconds[0] - 1
    return [
      BenchRow(
        measure: "Lease check reading the index, asset without a lease (mean of \(reads))",
        result: BenchFormat.micros(coldSeconds[0] / Double(reads))),
      BenchRow(
        measure: "Lease check reading the index, leased asset, not a play start (mean of \(reads))",
        result: BenchFormat.micros(coldSeconds[1] / Double(reads))),
      BenchRow(
        measure: "Lease check within 1 s of the last, asset without a lease (mean of \(reads))",
        result: BenchFormat.micros(checkSeconds[0] / Double(reads))),
      BenchRow(
        measure: "Lease check within 1 s of the last, leased asset (mean of \(reads))",
        result: BenchFormat.micros(checkSeconds[1] / Double(reads))),
      BenchRow(
        measure: "Warm 1 MiB random reads with the check, no lease (\(reads) reads)",
        result: BenchFormat.rate(bytes / readSeconds[0])),
      BenchRow(
        measure: "Warm 1 MiB random reads with the check, leased (\(reads) reads)",
        result: BenchFormat.rate(bytes / readSeconds[1])),
      BenchRow(
        measure: "Throughput change, leased vs no lease (same run, interleaved)",
        result: String(format: "%+.1f%%", -change / (1 + change) * 100),
        goal: "within ±3%", met: abs(change) <= 0.03),
    ]
  }

  /// Writes `count` bytes of benchmark input to `path` in 1 MiB blocks.
  private func writeInput(_ input: BenchInput, to path: String, count: Int) throws {
    guard FileManager.default.createFile(atPath: path, contents: nil),
      let handle = FileHandle(forWritingAtPath: path)
    else {
      throw CLIError("cannot create \(path)")
    }
    defer { try? handle.close() }
    var done = 0
    while done < count {
      let n = min(BenchInput.blockSize, count - done)
      try handle.write(contentsOf: Data(input.bytes(at: UInt64(done), count: n)))
      done += n
    }
  }

  private func millis(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1000) }

  static func markdown(_ rows: [BenchRow], command: String) -> String {
    var md =
      "## DRM-lite: crypto-shredding and lease checks\n\nReproduce with:\n\n```sh\n\(command)\n```\n\n"
    md += "| Measure | Result | Goal | Met |\n|---|---:|---|:-:|\n"
    for row in rows {
      md += "| \(row.measure) | \(row.result) | \(row.goal) | \(row.metText) |\n"
    }
    return md
  }
}
