import Dispatch
import Foundation
import LoopbackOrigin
import OriginClient
import VaultCore
import VaultLoader

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Runs async work from the synchronous benchmark and waits for it. The work runs detached
/// on the concurrency pool; the calling thread (not a pool thread) only waits.
enum BenchAsync {
  /// Seconds after which a step counts as hung: an error then, not a benchmark that never ends.
  static let limit = 600.0

  /// Runs `body` and returns its result.
  /// - Throws: what `body` throws, or ``CLIError`` naming `what` if it takes over ``limit``.
  static func wait<T: Sendable>(
    _ what: String, _ body: @escaping @Sendable () async throws -> T
  ) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    let task = Task.detached {
      do {
        box.set(.success(try await body()))
      } catch {
        box.set(.failure(error))
      }
      done.signal()
    }
    guard done.wait(timeout: .now() + limit) == .success else {
      task.cancel()
      throw CLIError("\(what) did not finish within \(Int(limit)) s")
    }
    return try box.get()
  }

  private final class ResultBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<T, any Error>?

    func set(_ value: Result<T, any Error>) { lock.withLock { result = value } }

    func get() throws -> T {
      guard let result = lock.withLock({ result }) else {
        throw CLIError("async benchmark step ended without a result")
      }
      return try result.get()
    }
  }
}

/// Process CPU seconds (user + system, all threads).
enum BenchProcess {
  static func cpuSeconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
      _ = getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
      _ = getrusage(RUSAGE_SELF, &usage)
    #endif
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
  }

  /// Resident set size now, in bytes (Linux: /proc/self/statm); nil elsewhere.
  static func residentBytes() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else {
      return nil
    }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
  }
}

/// Samples, every 2 ms on its own thread, how far the origin has sent a body and this
/// process's RSS, so a timed read can say when the transfer ended, how steadily the origin
/// was sending and how much was buffered, without touching the path it measures.
final class BenchSampler: @unchecked Sendable {
  /// What the samples showed.
  struct Summary {
    /// When the origin had sent the target byte count, seconds after the start.
    var sentAll: Double?
    /// The share of intervals, until then, in which the origin sent anything.
    var busy = 0.0
    /// The largest RSS seen.
    var peakRSS = 0
  }

  static let interval: useconds_t = 2_000
  private let lock = NSLock()
  private var stopped = false
  private var summary = Summary()
  private var thread: Thread?

  /// - Parameters:
  ///   - bytesSent: the origin's body bytes so far.
  ///   - target: the byte count whose arrival is timed.
  ///   - start: the clock reading the times are relative to.
  init(bytesSent: @escaping @Sendable () -> Int, target: Int, start: Double) {
    let thread = Thread { [self] in
      loop(bytesSent: bytesSent, target: target, start: start)
    }
    self.thread = thread
    thread.start()
  }

  private func loop(bytesSent: () -> Int, target: Int, start: Double) {
    var last = bytesSent()
    var intervals = 0
    var busy = 0
    while !lock.withLock({ stopped }) {
      usleep(Self.interval)
      let sent = bytesSent()
      let rss = BenchProcess.residentBytes() ?? 0
      lock.withLock {
        if summary.sentAll == nil {
          intervals += 1
          if sent > last { busy += 1 }
          summary.busy = Double(busy) / Double(intervals)
          if sent >= target { summary.sentAll = BenchClock.now() - start }
        }
        summary.peakRSS = max(summary.peakRSS, rss)
      }
      last = sent
    }
  }

  /// Stops sampling and returns what it saw.
  func stop() -> Summary {
    lock.withLock { stopped = true }
    while thread?.isFinished == false { usleep(1_000) }
    thread = nil
    return lock.withLock { summary }
  }
}

/// One download with the same client the loader uses.
struct DirectRun: Sendable {
  let seconds: Double
  /// Process CPU seconds during the download.
  let cpuSeconds: Double
}

/// One cold read through the loader.
struct LoaderColdRun: Sendable {
  let seconds: Double
  /// Process CPU seconds during the read.
  let cpuSeconds: Double
  /// The share of 2 ms intervals in which the origin was sending, until it was done.
  let originBusy: Double
  /// RSS growth during the read (largest sample minus the RSS before).
  let rssGrowth: Int
  /// The byte ranges of the loader's body requests (the probe left out), in order.
  let ranges: [ClosedRange<UInt64>]
  /// Where the loader's store batches ended (chunk counts), as the asset file was seen to
  /// grow; batches closer together than the sampling interval count as one.
  let batchEnds: [Int]
}

/// What one player replay cost the origin.
struct ReplayCost: Sendable {
  /// Body bytes the origin sent.
  let originBytes: Int
  /// Requests the origin answered.
  let requests: Int
  /// Chunks the loader stored.
  let chunksStored: Int
  /// Body bytes the loader's client received.
  let bytesReceived: UInt64
}

/// Everything the range-loader section measured. Times are in seconds.
struct LoaderFigures {
  let size: Int
  let chunkSize: Int
  let runs: Int
  /// `NIOHTTPOrigin().send` of the whole URL and draining the body, per round.
  let direct: [DirectRun]
  /// The same client fetching the ranges of that round's cold read, one request after
  /// another, draining each body (nothing stored), per round.
  let pattern: [Double]
  /// curl's own `speed_download` (bytes per second), per round; empty without curl.
  let curl: [Double]
  let cold: [LoaderColdRun]
  /// Reads of the same range with every chunk stored, per round.
  let warm: [Double]
  /// `AssetWriter.store` of the whole input in the batches the median cold read stored.
  let storeAlone: Double
  /// pwrite and fsync of the same batches to a plain file.
  let syncAlone: Double
  let replaySize: Int
  let replay: ReplayCost
  let replayAgain: ReplayCost

  func median(_ values: [Double]) -> Double { BenchFormat.quantile(values.sorted(), 0.5) }
  var directSeconds: Double { median(direct.map(\.seconds)) }
  var coldSeconds: Double { median(cold.map(\.seconds)) }
  var warmSeconds: Double { median(warm) }
  var patternSeconds: Double { median(pattern) }
  /// The cold run with the median time.
  var medianCold: LoaderColdRun {
    cold.sorted { $0.seconds < $1.seconds }[(cold.count - 1) / 2]
  }
  /// The direct run with the median time.
  var medianDirect: DirectRun {
    direct.sorted { $0.seconds < $1.seconds }[(direct.count - 1) / 2]
  }
}

/// Section 6: the range loader (`RangeLoader` over `NIOHTTPOrigin`) reading from a
/// `LoopbackOrigin` that serves the input from disk, against a direct download of the same
/// URL with the same client.
final class LoaderBench {
  /// Rounds of direct download, curl and cold read; the median is reported.
  static let runs = 3
  static let replaySize = 64 << 20
  static let replayPath = "/movie.mp4"

  let size: Int
  let runs: Int
  let directory: String
  let input: BenchInput
  let inputPath: String
  let key: MasterKey
  let chunkSize: Int

  init(
    size: Int, runs: Int, directory: String, input: BenchInput, inputPath: String,
    key: MasterKey, chunkSize: Int
  ) {
    self.size = size
    self.runs = runs
    self.directory = directory
    self.input = input
    self.inputPath = inputPath
    self.key = key
    self.chunkSize = chunkSize
  }

  /// Runs the section.
  /// - Parameters:
  ///   - step: shows progress.
  ///   - prime: writes and deletes a file of --size right before a timed step that writes one.
  ///   - curl: runs curl on a URL and returns its `speed_download`, or nil without curl.
  func run(
    step: (String) -> Void, prime: () throws -> Void, curl: (URL) throws -> Double?
  ) throws -> LoaderFigures {
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    origin.serve("/input.bin", file: inputPath)
    let url = origin.url("/input.bin")
    let vaultDirectory = directory + "/loader-vault"
    var direct: [DirectRun] = []
    var pattern: [Double] = []
    var curlRates: [Double] = []
    var cold: [LoaderColdRun] = []
    var warm: [Double] = []
    for round in 1...runs {
      step("range loader, round \(round) of \(runs): direct download, curl, cold read")
      direct.append(try download(url, ranges: nil))
      if let rate = try curl(url) { curlRates.append(rate) }
      try? FileManager.default.removeItem(atPath: vaultDirectory)
      try prime()
      let run = try coldRead(url, origin: origin, vaultDirectory: vaultDirectory)
      cold.append(run)
      pattern.append(try download(url, ranges: run.ranges).seconds)
    }
    step("range loader: warm reads; store and read alone")
    origin.resetStatistics()
    for _ in 1...runs { warm.append(try warmRead(url, vaultDirectory: vaultDirectory)) }
    try checkStored(url, vaultDirectory: vaultDirectory)
    guard origin.bodyBytesSent == 0, origin.requests.isEmpty else {
      throw CLIError(
        "warm reads fetched \(origin.bodyBytesSent) bytes in \(origin.requests.count) requests")
    }
    try FileManager.default.removeItem(atPath: vaultDirectory)
    let batchEnds = cold.sorted { $0.seconds < $1.seconds }[(cold.count - 1) / 2].batchEnds
    try prime()
    let storeAlone = try timeStore(ends: batchEnds)
    try prime()
    let syncAlone = try timeSync(ends: batchEnds)
    step("range loader: player replay on \(formatBytes(UInt64(Self.replaySize)))")
    let (replay, replayAgain) = try playerReplay(origin)
    return LoaderFigures(
      size: size, chunkSize: chunkSize, runs: runs, direct: direct, pattern: pattern,
      curl: curlRates, cold: cold, warm: warm, storeAlone: storeAlone, syncAlone: syncAlone,
      replaySize: Self.replaySize, replay: replay, replayAgain: replayAgain)
  }

  /// Downloads with a new `NIOHTTPOrigin` and drains the bodies: the whole URL in one request
  /// (`ranges` nil), or the given ranges one request after another.
  private func download(_ url: URL, ranges: [ClosedRange<UInt64>]?) throws -> DirectRun {
    let size = self.size
    return try BenchAsync.wait(ranges == nil ? "direct download" : "ranged download") {
      let client = NIOHTTPOrigin()
      let cpuBefore = BenchProcess.cpuSeconds()
      let start = BenchClock.now()
      var total = 0
      var expected = 0
      for range in ranges ?? [0...UInt64(size - 1)] {
        let request =
          ranges == nil
          ? OriginRequest(url: url)
          : OriginRequest(url: url, rangeStart: range.lowerBound, rangeEnd: range.upperBound)
        let response = try await client.send(request)
        guard response.status == (ranges == nil ? 200 : 206) else {
          throw CLIError("download of \(url): status \(response.status)")
        }
        for try await piece in response.body { total += piece.count }
        expected += range.count
      }
      let seconds = BenchClock.now() - start
      guard total == expected else {
        throw CLIError("download of \(url) returned \(total) bytes, not \(expected)")
      }
      return DirectRun(seconds: seconds, cpuSeconds: BenchProcess.cpuSeconds() - cpuBefore)
    }
  }

  /// A cold read of the whole resource through a loader on a new vault.
  private func coldRead(_ url: URL, origin: LoopbackOrigin, vaultDirectory: String) throws
    -> LoaderColdRun
  {
    let vault = try Vault.create(at: vaultDirectory, masterKey: key)
    let (size, chunkSize) = (self.size, self.chunkSize)
    return try BenchAsync.wait("cold read through the loader") {
      let loader = RangeLoader(vault: vault, origin: NIOHTTPOrigin())
      origin.resetStatistics()
      let rssBefore = BenchProcess.residentBytes() ?? 0
      let cpuBefore = BenchProcess.cpuSeconds()
      let start = BenchClock.now()
      // The probe's 2 body bytes come first.
      let sampler = BenchSampler(
        bytesSent: { origin.bodyBytesSent }, target: size + 2, start: start)
      var total = 0
      do {
        for try await piece in loader.read(url) { total += piece.count }
        // Timed until every chunk is sealed and recorded, not only delivered.
        try await loader.flush()
      } catch {
        _ = sampler.stop()
        throw error
      }
      let seconds = BenchClock.now() - start
      let cpu = BenchProcess.cpuSeconds() - cpuBefore
      let sampled = sampler.stop()
      guard total == size else {
        throw CLIError("cold read through the loader returned \(total) bytes, not \(size)")
      }
      // The store-alone replay uses as many equal runs as the loader made commits (each
      // commit is one fsync and one index transaction, whatever batches it covered).
      let chunks = (size + chunkSize - 1) / chunkSize
      let commits = max(1, min(chunks, await loader.statistics.storeCommits))
      let batchEnds = (1...commits).map { chunks * $0 / commits }
      let ranges = origin.requests.compactMap { record -> ClosedRange<UInt64>? in
        guard let range = record.range, range != "bytes=0-1" || size <= 2 else { return nil }
        return Self.parse(range, length: UInt64(size))
      }
      return LoaderColdRun(
        seconds: seconds, cpuSeconds: cpu, originBusy: sampled.busy,
        rssGrowth: max(0, sampled.peakRSS - rssBefore),
        ranges: ranges, batchEnds: batchEnds)
    }
  }

  /// `bytes=A-B` or `bytes=A-` as a closed range within `length`.
  static func parse(_ header: String, length: UInt64) -> ClosedRange<UInt64>? {
    guard header.hasPrefix("bytes=") else { return nil }
    let bounds = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
    guard bounds.count == 2, let first = UInt64(bounds[0]), first < length else { return nil }
    let last = bounds[1].isEmpty ? length - 1 : min(UInt64(bounds[1]) ?? (length - 1), length - 1)
    return first <= last ? first...last : nil
  }

  /// Seconds to read the whole resource through a new loader on the filled vault.
  private func warmRead(_ url: URL, vaultDirectory: String) throws -> Double {
    let vault = try Vault.open(at: vaultDirectory, masterKey: key)
    let size = self.size
    return try BenchAsync.wait("warm read through the loader") {
      let loader = RangeLoader(vault: vault, origin: NIOHTTPOrigin())
      let start = BenchClock.now()
      var total = 0
      for try await piece in loader.read(url) { total += piece.count }
      let seconds = BenchClock.now() - start
      let statistics = await loader.statistics
      guard total == size, statistics.bytesFromCache == UInt64(size) else {
        throw CLIError(
          "warm read returned \(total) bytes, \(statistics.bytesFromCache) from the vault")
      }
      return seconds
    }
  }

  /// Reads the whole resource through a new loader once more and compares every byte with
  /// the input (untimed).
  private func checkStored(_ url: URL, vaultDirectory: String) throws {
    let vault = try Vault.open(at: vaultDirectory, masterKey: key)
    let input = self.input
    try BenchAsync.wait("checking read through the loader") {
      let loader = RangeLoader(vault: vault, origin: NIOHTTPOrigin())
      var offset: UInt64 = 0
      for try await piece in loader.read(url) {
        guard piece == input.bytes(at: offset, count: piece.count) else {
          throw CLIError("the loader returned wrong bytes at offset \(offset)")
        }
        offset += UInt64(piece.count)
      }
    }
  }

  /// Seconds for `AssetWriter` to store the whole input on a new vault as the loader's
  /// storer does, in batches that end at the chunk counts `ends`: seal on all cores, pwrite
  /// and an index commit per batch, one fsync at the end. The input is read outside the
  /// timing.
  private func timeStore(ends: [Int]) throws -> Double {
    let vaultDirectory = directory + "/store-vault"
    try? FileManager.default.removeItem(atPath: vaultDirectory)
    defer { try? FileManager.default.removeItem(atPath: vaultDirectory) }
    let vault = try Vault.create(at: vaultDirectory, masterKey: key)
    let writer = try vault.beginFill(
      identity: .contentID("bench-store"), length: UInt64(size), validator: "\"bench\"",
      metadata: AssetMetadata(name: "bench-store", contentType: "application/octet-stream"))
    let batches = try timeBatches(ends: ends) { first, batch in
      try writer.commit(writer.write(firstIndex: first, plaintext: batch), syncFirst: false)
    }
    let start = BenchClock.now()
    try writer.syncRecorded()
    return batches + BenchClock.now() - start
  }

  /// Seconds to pwrite the same batches as ``timeStore(ends:)`` to a new plain file and
  /// fsync it at the end: its file-system part alone.
  private func timeSync(ends: [Int]) throws -> Double {
    let path = directory + "/batch-sync.bin"
    let out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard out >= 0 else {
      throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))")
    }
    defer {
      _ = close(out)
      _ = unlink(path)
    }
    let batches = try timeBatches(ends: ends) { _, batch in
      try BenchFiles.writeAll(out, batch, path: path)
    }
    let start = BenchClock.now()
    guard fsync(out) == 0 else {
      throw CLIError("fsync \(path): \(String(cString: strerror(errno)))")
    }
    return batches + BenchClock.now() - start
  }

  /// Reads the input in batches ending at the chunk counts `ends` (untimed) and returns the
  /// seconds `body` took over all of them.
  private func timeBatches(
    ends: [Int], _ body: (_ firstChunk: Int, UnsafeRawBufferPointer) throws -> Void
  ) throws -> Double {
    let chunks = (size + chunkSize - 1) / chunkSize
    let fd = open(inputPath, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      throw CLIError("cannot open \(inputPath): \(String(cString: strerror(errno)))")
    }
    defer { _ = close(fd) }
    let largest = zip(ends, [0] + ends).map { $0 - $1 }.max() ?? 1
    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: max(largest, 1) * chunkSize, alignment: 64)
    defer { buffer.deallocate() }
    var seconds = 0.0
    var first = 0
    for end in ends where end > first {
      let bytes = min(end * chunkSize, size) - first * chunkSize
      let batch = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<bytes])
      guard try BenchFiles.readFull(fd, batch, path: inputPath) == bytes else {
        throw CLIError("\(inputPath) is shorter than \(size) bytes")
      }
      let start = BenchClock.now()
      try body(first, UnsafeRawBufferPointer(batch))
      seconds += BenchClock.now() - start
      first = end
    }
    guard first == chunks else { throw CLIError("batches ended at chunk \(first) of \(chunks)") }
    return seconds
  }

  /// Two replays of a player's requests (as PlayerReplayTests) on a 64 MiB file through one
  /// loader on a new vault; returns what each cost the origin.
  private func playerReplay(_ origin: LoopbackOrigin) throws -> (ReplayCost, ReplayCost) {
    let path = directory + "/movie.mp4"
    try input.write(to: path, size: Self.replaySize)
    defer { _ = unlink(path) }
    origin.serve(Self.replayPath, file: path, contentType: "video/mp4")
    let vaultDirectory = directory + "/replay-vault"
    defer { try? FileManager.default.removeItem(atPath: vaultDirectory) }
    let vault = try Vault.create(at: vaultDirectory, masterKey: key)
    let input = self.input
    return try BenchAsync.wait("player replay") {
      let loader = RangeLoader(vault: vault, origin: NIOHTTPOrigin())
      let replay = PlayerReplay(
        loader: ResourceLoader(loader: loader), url: origin.url(Self.replayPath),
        size: Self.replaySize, input: input)
      var costs: [ReplayCost] = []
      for _ in 0..<2 {
        origin.resetStatistics()
        let before = await loader.statistics
        try await replay.run()
        // Let a cancelled transfer finish what it still sends, so it is counted.
        try await Task.sleep(nanoseconds: 200_000_000)
        let after = await loader.statistics
        costs.append(
          ReplayCost(
            originBytes: origin.bodyBytesSent, requests: origin.requests.count,
            chunksStored: after.chunksStored - before.chunksStored,
            bytesReceived: after.bytesFromOrigin - before.bytesFromOrigin))
      }
      return (costs[0], costs[1])
    }
  }
}

/// AVPlayer's request pattern through the loading-request interface, as PlayerReplayTests
/// replays it: probe, open-ended read cancelled after ~300 KB, resume, seek forward to 3/4
/// and read to the end, seek back, a small pre-buffer request. Every byte is checked.
struct PlayerReplay: Sendable {
  let loader: ResourceLoader
  let url: URL
  let size: Int
  let input: BenchInput

  /// Collects what a request delivered; cancels it from `respond` after `cancelAfter` bytes.
  private final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    var cancelAfter: Int?
    weak var request: LoadingRequest?

    func append(_ piece: Data) {
      let total = lock.withLock {
        data.append(piece)
        return data.count
      }
      if let limit = cancelAfter, total >= limit { request?.cancel() }
    }

    var bytes: [UInt8] { lock.withLock { [UInt8](data) } }
  }

  func run() async throws {
    // 1. Probe: content information and bytes 0-1.
    let probe = try await request(offset: 0, length: 2, info: true)
    guard probe.request.contentInformationRequest?.contentLength == Int64(size) else {
      throw CLIError("replay: the probe gave the wrong length")
    }
    // 2. bytes=0- , cancelled after ~300 KB.
    let open = try await request(offset: 0, toEnd: true, cancelAfter: 300_000)
    // 3. Resume where it stopped.
    _ = try await request(offset: open.count, toEnd: true, cancelAfter: 200_000)
    // 4. Seek forward to 3/4 and read to the end.
    let seek = try await request(offset: size * 3 / 4, toEnd: true)
    guard seek.count == size - size * 3 / 4 else {
      throw CLIError("replay: the read to the end stopped at \(seek.count) bytes")
    }
    // 5. Seek back into a stored region.
    _ = try await request(offset: 10_000, length: 100_000)
    // 6. A small pre-buffer request.
    _ = try await request(offset: size / 2, length: 65_536)
  }

  /// Runs one loading request to its end (finished or cancelled) and checks its bytes.
  private func request(
    offset: Int, length: Int = 0, toEnd: Bool = false, info: Bool = false,
    cancelAfter: Int? = nil
  ) async throws -> (request: LoadingRequest, count: Int) {
    let received = Received()
    received.cancelAfter = cancelAfter
    let data = LoadingRequest.DataRequest(
      requestedOffset: Int64(offset), requestedLength: length,
      requestsAllDataToEndOfResource: toEnd)
    let request = LoadingRequest(
      url: url, wantsContentInformation: info, dataRequest: data,
      respond: { received.append($0) })
    received.request = request
    await loader.handle(request).value
    if let error = request.error { throw CLIError("replay request at \(offset): \(error)") }
    guard request.isFinished || (cancelAfter != nil && request.isCancelled) else {
      throw CLIError("replay request at \(offset) neither finished nor was cancelled")
    }
    let bytes = received.bytes
    guard bytes == input.bytes(at: UInt64(offset), count: bytes.count),
      toEnd || cancelAfter != nil || bytes.count == length
    else {
      throw CLIError("replay request at \(offset) returned wrong bytes")
    }
    return (request, bytes.count)
  }
}

extension LoaderFigures {
  /// The section's rows; `exportRate` is the in-process `Vault.export` rate (bytes/s).
  func rows(exportRate: Double) -> [BenchRow] {
    let label = formatBytes(UInt64(size))
    let of = runs > 1 ? ", median of \(runs)" : ""
    let directRate = Double(size) / directSeconds
    let coldRatio = directSeconds / coldSeconds
    let warmRatio = Double(size) / warmSeconds / exportRate
    let cold = medianCold
    var rows: [BenchRow] = []
    rows.append(
      BenchRow(
        measure: "6. range loader, cold read of \(label) from a loopback origin serving the "
          + "file from disk (new vault each round\(of))",
        result: BenchFormat.rates(bytes: size, seconds: self.cold.map(\.seconds))
          + " (\(BenchFormat.ratio(coldRatio)) direct)",
        goal: "≥ 0.7 × direct (\(BenchFormat.rate(0.7 * directRate)))", met: coldRatio >= 0.7))
    rows.append(
      BenchRow(
        measure: "6. direct download of that URL, same client (`NIOHTTPOrigin`\(of))",
        result: BenchFormat.rates(bytes: size, seconds: direct.map(\.seconds))))
    if cold.ranges.count > 1 {
      rows.append(
        BenchRow(
          measure: "6. the same client fetching the cold read's \(cold.ranges.count) ranges one "
            + "after another, nothing stored\(of)",
          result: BenchFormat.rates(bytes: size, seconds: pattern)))
    }
    rows.append(
      BenchRow(
        measure: "6. `curl` of that URL (its speed_download\(of))",
        result: curl.isEmpty
          ? "curl: not installed"
          : BenchFormat.rates(bytes: size, seconds: curl.map { Double(size) / $0 })))
    rows.append(
      BenchRow(
        measure: "6. range loader, warm read of the same range (all chunks stored\(of))",
        result: BenchFormat.rates(bytes: size, seconds: warm)
          + " (\(BenchFormat.ratio(warmRatio)) Vault.export)",
        goal: "near Vault.export in-process: ≥ 0.8 × \(BenchFormat.rate(exportRate))",
        met: warmRatio >= 0.8))
    rows.append(
      BenchRow(
        measure: "6. `AssetWriter` storing \(label) alone in the cold read's "
          + "\(cold.batchEnds.count) commits (equal runs of \(BenchFormat.mebibytes(averageBatch)); "
          + "seal, pwrite, index commit each; one fsync at the end, as the storer does)",
        result: BenchFormat.rate(Double(size) / storeAlone)))
    rows.append(
      BenchRow(
        measure: "6. pwrite of the same batches to a plain file and one fsync, alone",
        result: BenchFormat.rate(Double(size) / syncAlone)))
    let slack = replay.requests * 2 * chunkSize
    rows.append(
      BenchRow(
        measure: "6. player replay, \(formatBytes(UInt64(replaySize))) file: origin body bytes",
        result: "\(BenchFormat.mebibytes(replay.originBytes)) "
          + "(\(BenchFormat.ratio(Double(replay.originBytes) / Double(replaySize))) the file) "
          + "in \(replay.requests) requests",
        goal: "≤ size + 2 chunks per request (\(BenchFormat.mebibytes(replaySize + slack)))",
        met: replay.originBytes <= replaySize + slack))
    rows.append(
      BenchRow(
        measure: "6. the same replay again: origin body bytes",
        result: "\(replayAgain.originBytes) B in \(replayAgain.requests) requests",
        goal: "0", met: replayAgain.originBytes == 0))
    return rows
  }

  /// The median cold read's average batch, in bytes.
  var averageBatch: Int { size / max(medianCold.batchEnds.count, 1) }
}

/// Interpretation and notes for the range-loader rows.
enum LoaderModel {
  /// - Parameters:
  ///   - exportRate: the in-process `Vault.export` rate (bytes/s).
  ///   - sealRate: section 2's all-core seal rate (bytes/s).
  ///   - cores: the machine's cores.
  static func lines(_ f: LoaderFigures, exportRate: Double, sealRate: Double, cores: Int)
    -> [String]
  {
    let s = BenchFormat.seconds
    let cold = f.medianCold
    let direct = f.medianDirect
    let (c, d, p) = (f.coldSeconds, f.directSeconds, f.patternSeconds)
    let (store, warm) = (f.storeAlone, f.warmSeconds)
    var lines: [String] = []
    let requests = cold.ranges.count
    let download =
      requests > 1
      ? "the download as the loader requests it (\(requests) ranges one after another, nothing "
        + "stored) \(s(p))" + (p > d * 1.05 ? ", \(s(p - d)) more than one request" : "")
      : "the download \(s(p))"
    let bound = max(p, store)
    lines.append(
      "Cold read: \(s(c)) against \(s(d)) for the direct download "
        + "(\(BenchFormat.ratio(d / max(c, 1e-9)))), timed until the last chunk is sealed and "
        + "recorded. Readers get each chunk from memory as it arrives; the store runs behind "
        + "them. Measured alone: \(download); the store path in the cold read's "
        + "\(cold.batchEnds.count) commits, replayed alone as equal runs (seal, pwrite, one index "
        + "commit each, one fsync at the end) \(s(store)). "
        + "Fully overlapped, the cold read would take the larger of the two, \(s(bound)); it "
        + "took \(s(max(c - bound, 0))) more. The origin was sending in "
        + "\(Int((cold.originBusy * 100).rounded()))% of 2 ms intervals.")
    let costs = [
      ("the store path", store), ("splitting the download", p - d),
    ]
    let largest = costs.max { $0.1 < $1.1 } ?? costs[0]
    let seal = Double(f.size) / max(sealRate, 1)
    let rest = store - f.syncAlone - seal
    lines.append(
      "The largest cost on top of the download is \(largest.0) (\(s(largest.1))). Of the "
        + "store path's \(s(store)), pwrite of the same batches to a plain file and one fsync "
        + "take \(s(f.syncAlone)) (\(BenchFormat.rate(Double(f.size) / max(f.syncAlone, 1e-9)))), "
        + "sealing about \(s(seal)) at section 2's all-core rate"
        + (rest > 0.05 * store
          ? ", leaving \(s(rest)) for the rest (the index commit per run, copies, hand-offs "
            + "between threads; not broken down here)" : "")
        + "; the storer commits what has arrived once 4 MiB are queued (up to 16 MiB per "
        + "commit, writing the next run while the last one is committed), "
        + "\(BenchFormat.mebibytes(f.averageBatch)) per commit on average here.")
    let available = Double(cores) * c
    let busyCores = String(format: "%.1f", cold.cpuSeconds / max(c, 1e-9))
    lines.append(
      "CPU: the cold read used \(s(cold.cpuSeconds)) of CPU (\(busyCores) of \(cores) cores); "
        + "the direct download alone uses \(s(direct.cpuSeconds)) (client and origin, both in "
        + "this process), so with \(cores) cores even perfect overlap needs ≥ "
        + "\(s(cold.cpuSeconds / Double(cores))) "
        + "(≤ \(BenchFormat.ratio(d / max(cold.cpuSeconds / Double(cores), 1e-9))) direct)"
        + (cold.cpuSeconds < 0.8 * available ? "; the cores were idle for part of it." : ".")
        + " Warm, the loader reads at \(BenchFormat.ratio(Double(f.size) / warm / exportRate)) "
        + "Vault.export: one chunk per pread and open on one thread, where export opens 4 MiB "
        + "batches on all cores but also writes and fsyncs a file.")
    let stored = f.replay.chunksStored * f.chunkSize
    let unstored = f.replay.originBytes - stored
    lines.append(
      "Replay: the origin sent \(BenchFormat.mebibytes(f.replay.originBytes)) in "
        + "\(f.replay.requests) requests for \(BenchFormat.mebibytes(stored)) the loader stored"
        + (unstored > 2 * f.chunkSize
          ? "; \(BenchFormat.mebibytes(unstored)) were sent for requests cancelled in flight "
            + "(the client received \(BenchFormat.mebibytes(Int(f.replay.bytesReceived))) of it)"
          : "")
        + ". The second replay sent \(f.replayAgain.originBytes) bytes in "
        + "\(f.replayAgain.requests) requests. RSS grew \(BenchFormat.mebibytes(cold.rssGrowth)) "
        + "during the cold read (bodies between the origin client and the store); peak RSS is not a goal "
        + "of this section.")
    return lines
  }

  static func notes(_ f: LoaderFigures) -> [String] {
    [
      "Range loader: a `LoopbackOrigin` in this process serves the input from disk (page "
        + "cache) on 127.0.0.1; client and origin share the cores. Each of \(f.runs) rounds runs "
        + "a direct download (a new `NIOHTTPOrigin`, `send(OriginRequest(url:))`, body drained and "
        + "counted), curl, a cold read of bytes 0–end through a new `RangeLoader` (over "
        + "`NIOHTTPOrigin`, as `vault serve` and `vault fetch` use) on a new vault, and the same client fetching that read's ranges one "
        + "after another without storing them. Warm reads use a new `RangeLoader` on the filled "
        + "vault and must make no origin request; one more warm read checks every byte.",
      "During a cold read a thread samples every 2 ms the origin's body bytes sent (the share "
        + "of intervals in which it was sending) and RSS. The store-alone row calls "
        + "`AssetWriter.store` on a new vault with the input (read untimed) in as many equal runs "
        + "as the median cold read made store commits (`LoaderStatistics.storeCommits`); the "
        + "plain-file row writes the same runs with pwrite and fsyncs after each.",
      "Player replay: the pattern of PlayerReplayTests (probe bytes 0–1 with content info; "
        + "0– cancelled after 300 KB; resume, cancelled after 200 KB; 3/4–end; 10000–109999; "
        + "64 KiB at the middle) through `ResourceLoader`/`LoadingRequest` on one loader and a "
        + "new vault, with the \(formatBytes(UInt64(f.replaySize))) file served from disk at "
        + "full loopback speed (the test trickles at 16 MiB/s), then the same replay again. "
        + "Every delivered byte is checked. The origin counts body bytes as it hands them to "
        + "its socket; they are read 0.2 s after each replay.",
    ]
  }
}
