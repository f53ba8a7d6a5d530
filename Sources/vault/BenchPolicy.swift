import Foundation
@_spi(Bench) import VaultCore

/// Section 7 of `vault bench`: what the cache policy costs: the index per chunk write and
/// per read (LRU), opening and pruning a vault of many assets.
struct PolicyBench {
  /// Assets in the many-assets vault (the 10,000).
  let assets: Int
  let directory: String
  let key: MasterKey

  struct Figures {
    var assets: Int
    var commit: [Double]
    var touch: [Double]
    var noteAccess: Double
    var setup: Double
    var open: [Double]
    var prune: Double
    var evicted: Int
  }

  func run(step: (String) -> Void) throws -> Figures {
    let vaultDirectory = directory + "/policy-vault"
    try? FileManager.default.removeItem(atPath: vaultDirectory)
    defer { try? FileManager.default.removeItem(atPath: vaultDirectory) }
    let vault = try Vault.create(at: vaultDirectory, masterKey: key)

    // Index cost per chunk write: one presence-bit commit, 300 times on one asset.
    step("policy: index commits per chunk write and per read")
    let chunkCount = 300
    let writer = try vault.beginFill(
      identity: .contentID("bench-index"),
      length: UInt64(chunkCount * vault.chunkSize), validator: "\"bench\"",
      metadata: AssetMetadata(name: "bench-index"))
    // The slots are written first (the file must back what the index claims, or the next
    // open's reconciliation drops the bits); the timed commits then set bits again.
    let plaintext = [UInt8](repeating: 0x5A, count: chunkCount * vault.chunkSize)
    try plaintext.withUnsafeBytes { _ = try writer.store(firstIndex: 0, plaintext: $0) }
    var commit: [Double] = []
    for chunk in 0..<chunkCount {
      let start = BenchClock.now()
      try vault.benchRecordChunk(writer.assetID, generation: writer.generation, index: chunk)
      commit.append(BenchClock.now() - start)
    }
    var touch: [Double] = []
    for _ in 0..<300 {
      let start = BenchClock.now()
      try vault.benchTouch(writer.assetID)
      touch.append(BenchClock.now() - start)
    }
    // noteAccess as readers call it: coalesced, so almost always memory only.
    let calls = 100_000
    let noteStart = BenchClock.now()
    for _ in 0..<calls { vault.noteAccess(writer.assetID) }
    let noteAccess = (BenchClock.now() - noteStart) / Double(calls)

    // A vault of many small assets (real imports), then open and prune it.
    step("policy: importing \(assets) assets of 1 KiB (setup, untimed)")
    let source = directory + "/policy-1k.bin"
    try Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 7) })
      .write(to: URL(fileURLWithPath: source))
    defer { try? FileManager.default.removeItem(atPath: source) }
    let setupStart = BenchClock.now()
    for n in 0..<assets {
      _ = try vault.importFile(at: source, name: "a\(n)", contentType: nil)
    }
    let setup = BenchClock.now() - setupStart
    step("policy: opening a vault of \(assets) assets, pruning all of them")
    var open: [Double] = []
    for _ in 0..<5 {
      let start = BenchClock.now()
      let reopened = try Vault.open(at: vaultDirectory, masterKey: key)
      open.append(BenchClock.now() - start)
      guard reopened.repairsOnOpen.isEmpty else {
        throw CLIError("opening the bench vault repaired something: \(reopened.repairsOnOpen)")
      }
    }
    let pruneStart = BenchClock.now()
    let report = try vault.prune(limits: CacheLimits(maxBytes: 1), protecting: [writer.assetID])
    let prune = BenchClock.now() - pruneStart
    return Figures(
      assets: assets, commit: commit.sorted(), touch: touch.sorted(), noteAccess: noteAccess,
      setup: setup, open: open.sorted(), prune: prune, evicted: report.evicted.count)
  }
}

extension PolicyBench.Figures {
  func rows() -> [BenchRow] {
    let p50 = { (values: [Double]) in BenchFormat.quantile(values, 0.5) }
    let openMedian = p50(open)
    return [
      BenchRow(
        measure: "7. index commit per chunk write: one presence-bit transaction (p50 of 300)",
        result: BenchFormat.micros(p50(commit))
          + "; per chunk in the loader's 16 MiB runs (256 chunks of 64 KiB per commit): "
          + BenchFormat.micros(p50(commit) / 256)),
      BenchRow(
        measure: "7. index cost per read (LRU): `noteAccess` as readers call it (coalesced)",
        result: BenchFormat.micros(noteAccess)
          + "; when it writes (once per asset per 10 s): \(BenchFormat.micros(p50(touch)))"),
      BenchRow(
        measure: "7. open a vault of \(assets) assets (with crash reconciliation; median of 5)",
        result: String(format: "%.0f ms", openMedian * 1000), goal: "< 200 ms",
        met: openMedian < 0.2),
      BenchRow(
        measure: "7. prune of \(assets) assets (all evicted, batches of 256)",
        result: String(
          format: "%.2f s (%.0f µs per asset), %d evicted", prune,
          prune / Double(max(assets, 1)) * 1e6, evicted)),
      BenchRow(
        measure: "7. setup: \(assets) imports of 1 KiB (each fsyncs file, directory, index)",
        result: String(format: "%.1f s (%.2f ms each)", setup, setup / Double(assets) * 1000)),
    ]
  }

  func lines() -> [String] {
    [
      "Cache policy: a presence-bit commit costs "
        + BenchFormat.micros(BenchFormat.quantile(commit, 0.5))
        + " (a WAL commit with synchronous=FULL: one fsync); the loader makes one per stored "
        + "run, so per chunk it is small. Reads update the LRU time in memory and write it at "
        + "most once per asset per 10 s. Opening lists chunks/ once to reconcile after a "
        + "crash (no stat, no decryption), so it grows with the number of assets."
    ]
  }
}
