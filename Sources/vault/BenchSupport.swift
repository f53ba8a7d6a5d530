import Dispatch
import Foundation
import VaultCore
import VaultCrypto

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Monotonic wall time and per-thread CPU time, in seconds.
enum BenchClock {
  /// Seconds on the monotonic clock.
  static func now() -> Double { read(CLOCK_MONOTONIC) }

  /// CPU seconds (user + system) the calling thread has used.
  static func threadCPU() -> Double { read(CLOCK_THREAD_CPUTIME_ID) }

  private static func read(_ clock: clockid_t) -> Double {
    var time = timespec()
    _ = clock_gettime(clock, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
  }
}

/// A finished child process: how it ended, its wall time and its own resource usage
/// (from `wait4`, so the figures are this child's alone).
struct ChildRun {
  /// The command line, as run.
  let arguments: [String]
  /// Exit status, or 128 + the signal number if a signal ended it.
  let status: Int32
  /// Wall time from spawn to exit.
  let seconds: Double
  /// Peak resident set size in bytes.
  let maxRSS: Int
  /// Whether ``maxRSS`` is the child's own peak (from GNU time). If false it is `wait4`'s
  /// ru_maxrss, which on Linux also counts this process's peak RSS at the time of the spawn
  /// (exec records the old, shared address space's peak), so it is only an upper bound.
  let maxRSSIsExact: Bool
  /// CPU seconds (user + system) the child used, from `wait4`.
  var cpuSeconds = 0.0
  /// Captured standard output (empty when the output was passed through).
  let output: String
  /// Captured standard error (empty when the output was passed through).
  let errorOutput: String

  /// Throws a one-line error unless the child exited with status 0.
  func check() throws {
    guard status != 0 else { return }
    let detail = errorOutput.split(whereSeparator: \.isNewline).last.map(String.init) ?? ""
    throw CLIError(
      "`\(arguments.joined(separator: " "))` failed (status \(status))"
        + (detail.isEmpty ? "" : ": \(detail)"))
  }
}

/// Runs programs with `posix_spawnp` and `wait4`, so the wall time and peak RSS of each
/// child are measured alone. SIGINT and SIGTERM are reset to their defaults in the child
/// (this process ignores them while its own handler runs).
enum Subprocess {
  /// Runs `arguments` (the first is searched in PATH), stdin from /dev/null.
  /// - Parameters:
  ///   - arguments: the program and its arguments.
  ///   - captureIn: a directory for the captured stdout and stderr; nil passes the child's
  ///     output through to this process's stderr (so stdout stays clean for the table).
  ///   - gnuTime: GNU time's path, to run the child under `time -f %M` for its exact peak
  ///     RSS (time is small, so its own footprint does not leak into the child's figure).
  ///   - discardOutput: send the child's stdout to /dev/null instead of capturing it.
  /// - Returns: how the child ended; a non-zero status is not an error here.
  /// - Throws: ``CLIError`` if the program cannot be started.
  static func run(
    _ arguments: [String], captureIn directory: String?, gnuTime: String? = nil,
    discardOutput: Bool = false
  ) throws -> ChildRun {
    guard var program = arguments.first else { throw CLIError("empty command line") }
    let outPath = directory.map { "\($0)/.child-\(getpid()).out" }
    let errPath = directory.map { "\($0)/.child-\(getpid()).err" }
    let rssPath = directory.flatMap { gnuTime == nil ? nil : "\($0)/.child-\(getpid()).rss" }
    defer {
      for path in [outPath, errPath, rssPath] { if let path { _ = unlink(path) } }
    }
    var spawned = arguments
    if let gnuTime, let rssPath {
      spawned = [gnuTime, "-f", "%M", "-o", rssPath] + arguments
      program = gnuTime
    }
    let start = BenchClock.now()
    let pid = try ChildSpawn.start(
      program, spawned,
      output: outPath.flatMap { out in
        errPath.map { .files(out: discardOutput ? "/dev/null" : out, err: $0) }
      } ?? .stderrToStdout)
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 {
      guard errno == EINTR else {
        throw CLIError("waiting for \(program): \(String(cString: strerror(errno)))")
      }
    }
    let seconds = BenchClock.now() - start
    let signal = status & 0x7f
    #if os(Linux)
      var maxRSS = Int(usage.ru_maxrss) * 1024  // kilobytes on Linux
    #else
      var maxRSS = Int(usage.ru_maxrss)  // bytes on macOS
    #endif
    var exact = false
    if let rssPath,
      let kilobytes = Int(readText(rssPath).trimmingCharacters(in: .whitespacesAndNewlines))
    {
      maxRSS = kilobytes * 1024
      exact = true
    }
    func cpu(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return ChildRun(
      arguments: spawned, status: signal == 0 ? (status >> 8) & 0xff : 128 + signal,
      seconds: seconds, maxRSS: maxRSS, maxRSSIsExact: exact,
      cpuSeconds: cpu(usage.ru_utime) + cpu(usage.ru_stime),
      output: outPath.map(readText) ?? "", errorOutput: errPath.map(readText) ?? "")
  }

  /// GNU time (`/usr/bin/time`), if installed: it supports `-f %M -o FILE`.
  static func findGNUTime(scratch directory: String) -> String? {
    let path = "/usr/bin/time"
    guard access(path, X_OK) == 0,
      let run = try? Subprocess.run([path, "--version"], captureIn: directory),
      run.status == 0, (run.output + run.errorOutput).contains("GNU")
    else { return nil }
    return path
  }

  /// Where `program` is in PATH, if anywhere.
  static func find(_ program: String) -> String? {
    if program.contains("/") { return access(program, X_OK) == 0 ? program : nil }
    let path = environment("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
    for directory in path.split(separator: ":") {
      let candidate = "\(directory)/\(program)"
      if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
  }

  /// The absolute path of the running `vault` binary.
  static func currentExecutable() -> String {
    #if os(Linux)
      if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        return path
      }
    #endif
    let argument = CommandLine.arguments.first ?? "vault"
    if argument.contains("/") {
      return URL(fileURLWithPath: argument).standardizedFileURL.path
    }
    return find(argument) ?? argument
  }

  private static func readText(_ path: String) -> String {
    guard let data = FileManager.default.contents(atPath: path) else { return "" }
    return String(decoding: data, as: UTF8.self)
  }
}

/// What the benchmark ran on.
struct MachineInfo {
  /// Online processors (what `nproc` prints).
  let processors: Int
  /// The CPU model from /proc/cpuinfo.
  let cpuModel: String
  /// `openssl version` of the CLI.
  let opensslCLI: String
  /// The libcrypto this binary is linked with (`OpenSSL_version`).
  let libcrypto: String
  /// `age --version`, or nil if age is not installed.
  let age: String?
  /// Kernel release and machine.
  let kernel: String
  /// Total memory in bytes.
  let memory: UInt64
  /// 1-minute load average when the run started.
  let loadAverage: Double
  /// Whether this binary is a debug build.
  let debugBuild: Bool

  static func current(opensslCLI: String, age: String?) -> MachineInfo {
    var name = utsname()
    uname(&name)
    let release = withUnsafeBytes(of: name.release) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    let machine = withUnsafeBytes(of: name.machine) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    var load = [0.0, 0.0, 0.0]
    _ = getloadavg(&load, 3)
    #if DEBUG
      let debug = true
    #else
      let debug = false
    #endif
    return MachineInfo(
      processors: max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))), cpuModel: cpuModel(),
      opensslCLI: opensslCLI, libcrypto: linkedLibcrypto(), age: age,
      kernel: "\(release) \(machine)", memory: ProcessInfo.processInfo.physicalMemory,
      loadAverage: load[0], debugBuild: debug)
  }

  private static func cpuModel() -> String {
    guard let data = FileManager.default.contents(atPath: "/proc/cpuinfo") else { return "unknown" }
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n")
    where line.hasPrefix("model name") {
      if let colon = line.firstIndex(of: ":") {
        return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      }
    }
    return "unknown"
  }

  /// `OpenSSL_version(OPENSSL_VERSION)` of the libcrypto loaded in this process.
  private static func linkedLibcrypto() -> String {
    typealias VersionFunction = @convention(c) (Int32) -> UnsafePointer<CChar>?
    guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "OpenSSL_version") else {
      return "unknown"
    }
    let version = unsafeBitCast(symbol, to: VersionFunction.self)
    return version(0).map { String(cString: $0) } ?? "unknown"
  }
}

/// `openssl speed` results: bytes per second for each block size.
enum OpenSSLSpeed {
  /// Parses `-mr` output: a `+H:size:size…` line and a `+F:n:name:rate:rate…` line.
  static func parse(_ output: String) -> [Int: Double] {
    var sizes: [Int] = []
    var rates: [Double] = []
    for line in output.split(whereSeparator: \.isNewline) {
      let fields = line.split(separator: ":", omittingEmptySubsequences: false)
      if line.hasPrefix("+H:") {
        sizes = fields.dropFirst().compactMap { Int($0) }
      } else if line.hasPrefix("+F:") && fields.count > 3 {
        rates = fields.dropFirst(3).compactMap { Double($0) }
      }
    }
    var result: [Int: Double] = [:]
    for (size, rate) in zip(sizes, rates) { result[size] = rate }
    return result
  }
}

/// One cipher measurement: bytes processed, wall time and CPU time.
struct CipherRate {
  let bytes: Double
  let wallSeconds: Double
  let cpuSeconds: Double

  /// Bytes per CPU-second, the basis `openssl speed` reports by default.
  var perCPUSecond: Double { bytes / max(cpuSeconds, 1e-9) }
  /// Bytes per wall-clock second.
  var perWallSecond: Double { bytes / max(wallSeconds, 1e-9) }
}

/// In-process ChaCha20-Poly1305 throughput through `ChaChaPoly.Context`, done the way the
/// vault does a chunk: a fresh random nonce, a 51-byte AAD, separate input and output buffers.
enum CipherBench {
  static let aadLength = 51

  /// Seals (or opens) one `chunkSize` chunk over and over on the calling thread for
  /// `seconds`, after a short warm-up.
  static func loop(sealing: Bool, key: SymmetricKey, chunkSize: Int, seconds: Double) throws
    -> CipherRate
  {
    let worker = try Worker(key: key, chunkSize: chunkSize)
    for _ in 0..<16 { try sealing ? worker.seal(index: 0) : worker.open() }
    var operations = 0
    let wallStart = BenchClock.now()
    let cpuStart = BenchClock.threadCPU()
    var wall = 0.0
    repeat {
      for _ in 0..<16 {
        if sealing { try worker.seal(index: operations) } else { try worker.open() }
        operations += 1
      }
      wall = BenchClock.now() - wallStart
    } while wall < seconds
    return CipherRate(
      bytes: Double(operations * chunkSize), wallSeconds: wall,
      cpuSeconds: BenchClock.threadCPU() - cpuStart)
  }

  /// ``loop(sealing:key:chunkSize:seconds:)`` on `threads` threads at once, each with its
  /// own context; the rate is the sum over threads per wall second.
  static func parallel(
    sealing: Bool, key: SymmetricKey, chunkSize: Int, seconds: Double, threads: Int
  ) throws -> CipherRate {
    let results = LockedResults()
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
      do {
        results.add(
          try loop(sealing: sealing, key: key, chunkSize: chunkSize, seconds: seconds))
      } catch {
        results.fail(error)
      }
    }
    return try results.total()
  }

  /// Seconds per 12-byte `SecureRandom.fill` (RAND_bytes), the nonce the vault draws for
  /// every chunk it seals.
  static func nonceCost(samples: Int = 100_000) throws -> Double {
    var nonce = [UInt8](repeating: 0, count: 12)
    let start = BenchClock.threadCPU()
    try nonce.withUnsafeMutableBytes { bytes in
      for _ in 0..<samples { try SecureRandom.fill(bytes) }
    }
    return (BenchClock.threadCPU() - start) / Double(samples)
  }

  /// Wall time of each of `samples` single-chunk opens, sorted.
  static func openLatencies(key: SymmetricKey, chunkSize: Int, samples: Int) throws -> [Double] {
    let worker = try Worker(key: key, chunkSize: chunkSize)
    for _ in 0..<64 { try worker.open() }
    var times: [Double] = []
    times.reserveCapacity(samples)
    for _ in 0..<samples {
      let start = BenchClock.now()
      try worker.open()
      times.append(BenchClock.now() - start)
    }
    return times.sorted()
  }

  /// One context and its buffers; `open()` opens the chunk sealed at creation.
  private final class Worker {
    let context: ChaChaPoly.Context
    let chunkSize: Int
    let plaintext: UnsafeMutableRawBufferPointer
    let output: UnsafeMutableRawBufferPointer
    let slot: UnsafeMutableRawBufferPointer
    let sealedSlot: UnsafeMutableRawBufferPointer
    var aad: [UInt8]

    init(key: SymmetricKey, chunkSize: Int) throws {
      context = try ChaChaPoly.Context(key: key)
      self.chunkSize = chunkSize
      plaintext = .allocate(byteCount: chunkSize, alignment: 64)
      output = .allocate(byteCount: chunkSize, alignment: 64)
      slot = .allocate(byteCount: chunkSize + 28, alignment: 64)
      sealedSlot = .allocate(byteCount: chunkSize + 28, alignment: 64)
      aad = [UInt8](repeating: 0x5A, count: CipherBench.aadLength)
      try SecureRandom.fill(plaintext)
      try seal(index: 0)
      sealedSlot.copyMemory(from: UnsafeRawBufferPointer(slot))
    }

    deinit {
      for buffer in [plaintext, output, slot, sealedSlot] { buffer.deallocate() }
    }

    /// Seals the plaintext into `slot` as chunk `index`: nonce ‖ ciphertext ‖ tag.
    func seal(index: Int) throws {
      let nonce = UnsafeMutableRawBufferPointer(rebasing: slot[0..<12])
      try SecureRandom.fill(nonce)
      withUnsafeBytes(of: UInt64(index).littleEndian) { bytes in
        for (k, byte) in bytes.enumerated() { aad[38 + k] = byte }
      }
      try aad.withUnsafeBytes { aadBytes in
        try context.seal(
          plaintext: UnsafeRawBufferPointer(plaintext), nonce: UnsafeRawBufferPointer(nonce),
          aad: aadBytes,
          ciphertext: UnsafeMutableRawBufferPointer(rebasing: slot[12..<(12 + chunkSize)]),
          tag: UnsafeMutableRawBufferPointer(rebasing: slot[(12 + chunkSize)...]))
      }
    }

    /// Authenticates and decrypts the chunk sealed at creation into `output`.
    func open() throws {
      let sealed = UnsafeRawBufferPointer(sealedSlot)
      withUnsafeBytes(of: UInt64(0).littleEndian) { bytes in
        for (k, byte) in bytes.enumerated() { aad[38 + k] = byte }
      }
      try aad.withUnsafeBytes { aadBytes in
        try context.open(
          ciphertext: UnsafeRawBufferPointer(rebasing: sealed[12..<(12 + chunkSize)]),
          tag: UnsafeRawBufferPointer(rebasing: sealed[(12 + chunkSize)...]),
          nonce: UnsafeRawBufferPointer(rebasing: sealed[0..<12]), aad: aadBytes,
          plaintext: output)
      }
    }
  }
}

/// Results of parallel workers, behind a lock.
private final class LockedResults: @unchecked Sendable {
  private let lock = NSLock()
  private var rates: [CipherRate] = []
  private var error: (any Error)?

  func add(_ rate: CipherRate) {
    lock.lock()
    rates.append(rate)
    lock.unlock()
  }

  func fail(_ error: any Error) {
    lock.lock()
    if self.error == nil { self.error = error }
    lock.unlock()
  }

  /// All bytes over the slowest worker's wall time.
  func total() throws -> CipherRate {
    lock.lock()
    defer { lock.unlock() }
    if let error { throw error }
    return CipherRate(
      bytes: rates.reduce(0) { $0 + $1.bytes },
      wallSeconds: rates.map(\.wallSeconds).max() ?? 0,
      cpuSeconds: rates.reduce(0) { $0 + $1.cpuSeconds })
  }
}

/// The generated input: one random 1 MiB block repeated, each copy stamped with its index in
/// its first 8 bytes, so the content of any offset is known without keeping the file.
struct BenchInput {
  static let blockSize = 1 << 20
  let block: [UInt8]

  init() throws {
    block = try SecureRandom.bytes(count: Self.blockSize)
  }

  /// The bytes of block `index`.
  func blockBytes(_ index: Int) -> [UInt8] {
    var bytes = block
    stamp(index, into: &bytes, from: 0)
    return bytes
  }

  /// The `count` bytes at `offset` of the file.
  func bytes(at offset: UInt64, count: Int) -> [UInt8] {
    var result: [UInt8] = []
    result.reserveCapacity(count)
    var position = offset
    while result.count < count {
      let index = Int(position / UInt64(Self.blockSize))
      let from = Int(position % UInt64(Self.blockSize))
      let take = min(Self.blockSize - from, count - result.count)
      let start = result.count
      result += block[from..<(from + take)]
      if from < 8 { stamp(index, into: &result, from: from, at: start) }
      position += UInt64(take)
    }
    return result
  }

  /// Overwrites the stamp bytes `from..<8` of block `index`, placed at `at` in `bytes`.
  private func stamp(_ index: Int, into bytes: inout [UInt8], from: Int, at: Int = 0) {
    withUnsafeBytes(of: UInt64(index).littleEndian) { stamp in
      for k in from..<8 where at + k - from < bytes.count { bytes[at + k - from] = stamp[k] }
    }
  }

  /// Writes `size` bytes to `path` and syncs them, so the file is in the page cache and
  /// clean (no write-back of it disturbs later measurements).
  func write(to path: String, size: Int) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))")
    }
    defer { _ = close(fd) }
    var written = 0
    var index = 0
    while written < size {
      let bytes = blockBytes(index)
      let take = min(Self.blockSize, size - written)
      try bytes.withUnsafeBytes {
        try BenchFiles.writeAll(fd, UnsafeRawBufferPointer(rebasing: $0[0..<take]), path: path)
      }
      written += take
      index += 1
    }
    guard fsync(fd) == 0 else {
      throw CLIError("fsync \(path): \(String(cString: strerror(errno)))")
    }
  }
}

/// File helpers: whole writes, comparisons, and the cost of plain reads and writes.
enum BenchFiles {
  /// Writes all of `buffer` to `fd`.
  static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String) throws {
    guard let base = buffer.baseAddress else { return }
    var done = 0
    while done < buffer.count {
      let n = Foundation.write(fd, base + done, buffer.count - done)
      if n < 0 {
        if errno == EINTR { continue }
        throw CLIError("write \(path): \(String(cString: strerror(errno)))")
      }
      done += n
    }
  }

  /// Reads up to `buffer.count` bytes; fewer only at end of file.
  static func readFull(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, path: String) throws
    -> Int
  {
    guard let base = buffer.baseAddress else { return 0 }
    var done = 0
    while done < buffer.count {
      let n = Foundation.read(fd, base + done, buffer.count - done)
      if n < 0 {
        if errno == EINTR { continue }
        throw CLIError("read \(path): \(String(cString: strerror(errno)))")
      }
      if n == 0 { break }
      done += n
    }
    return done
  }

  /// Whether two files have identical contents.
  static func identical(_ a: String, _ b: String) throws -> Bool {
    let fa = open(a, O_RDONLY | O_CLOEXEC)
    let fb = open(b, O_RDONLY | O_CLOEXEC)
    defer {
      if fa >= 0 { _ = close(fa) }
      if fb >= 0 { _ = close(fb) }
    }
    guard fa >= 0, fb >= 0 else { throw CLIError("cannot open \(fa < 0 ? a : b) to compare") }
    let size = 4 << 20
    let ba = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
    let bb = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
    defer {
      ba.deallocate()
      bb.deallocate()
    }
    while true {
      let na = try readFull(fa, ba, path: a)
      let nb = try readFull(fb, bb, path: b)
      guard na == nb else { return false }
      if na == 0 { return true }
      guard let pa = ba.baseAddress, let pb = bb.baseAddress, memcmp(pa, pb, na) == 0 else {
        return false
      }
    }
  }

  /// Seconds to read `path` whole in 4 MiB reads (from the page cache if it is there).
  static func timeRead(_ path: String) throws -> Double {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      throw CLIError("cannot open \(path): \(String(cString: strerror(errno)))")
    }
    defer { _ = close(fd) }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 << 20, alignment: 64)
    defer { buffer.deallocate() }
    let start = BenchClock.now()
    while try readFull(fd, buffer, path: path) > 0 {}
    return BenchClock.now() - start
  }

  /// Seconds to write `size` bytes to a new file in 4 MiB writes, then to fsync it (unless
  /// `sync` is false); the file is removed afterwards.
  static func timeWrite(_ path: String, size: Int, sync: Bool = true) throws
    -> (write: Double, sync: Double)
  {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      throw CLIError("cannot create \(path): \(String(cString: strerror(errno)))")
    }
    defer {
      _ = close(fd)
      _ = unlink(path)
    }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 << 20, alignment: 64)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0xA5)
    let start = BenchClock.now()
    var written = 0
    while written < size {
      let take = min(buffer.count, size - written)
      try writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[0..<take]), path: path)
      written += take
    }
    let wrote = BenchClock.now()
    if !sync { return (wrote - start, 0) }
    guard fsync(fd) == 0 else {
      throw CLIError("fsync \(path): \(String(cString: strerror(errno)))")
    }
    return (wrote - start, BenchClock.now() - wrote)
  }

  /// Seconds to fsync an existing file.
  static func timeSync(_ path: String) throws -> Double {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      throw CLIError("cannot open \(path): \(String(cString: strerror(errno)))")
    }
    defer { _ = close(fd) }
    let start = BenchClock.now()
    guard fsync(fd) == 0 else {
      throw CLIError("fsync \(path): \(String(cString: strerror(errno)))")
    }
    return BenchClock.now() - start
  }

  /// Free bytes on the file system holding `path`.
  static func freeSpace(_ path: String) -> UInt64? {
    var info = statvfs()
    guard statvfs(path, &info) == 0 else { return nil }
    return UInt64(info.f_bavail) * UInt64(info.f_frsize)
  }
}

/// A one-line status on stderr when it is a terminal; silent otherwise.
final class BenchStatus {
  private let enabled = isatty(STDERR_FILENO) == 1
  private let total: Int
  private var step = 0

  init(steps: Int) { total = steps }

  /// Shows the next step.
  func next(_ text: String) {
    step += 1
    guard enabled else { return }
    FileHandle.standardError.write(Data("\r\u{1B}[K[\(step)/\(total)] \(text)…".utf8))
  }

  /// Clears the line.
  func finish() {
    guard enabled, step > 0 else { return }
    FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
  }
}

/// `posix_spawnp` as the benchmark starts its children: stdin from /dev/null, SIGINT and
/// SIGTERM back at their defaults (the bench ignores them while children run).
enum ChildSpawn {
  /// Where a child's stdout and stderr go.
  enum Output {
    /// stdout and stderr into their own files.
    case files(out: String, err: String)
    /// stdout into a file, stderr with it.
    case file(String)
    /// stderr joins the stdout the child inherits.
    case stderrToStdout
  }

  /// Starts `program` (searched in PATH) with `arguments` (argv, program name included).
  /// - Throws: ``CLIError`` if it cannot be started.
  static func start(_ program: String, _ arguments: [String], output: Output) throws -> pid_t {
    #if canImport(Glibc)
      var actions = posix_spawn_file_actions_t()
      var attributes = posix_spawnattr_t()
    #else
      var actions: posix_spawn_file_actions_t?
      var attributes: posix_spawnattr_t?
    #endif
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    sigaddset(&defaults, SIGINT)
    sigaddset(&defaults, SIGTERM)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    let create = O_WRONLY | O_CREAT | O_TRUNC
    switch output {
    case .files(let out, let err):
      posix_spawn_file_actions_addopen(&actions, 1, out, create, 0o600)
      posix_spawn_file_actions_addopen(&actions, 2, err, create, 0o600)
    case .file(let path):
      posix_spawn_file_actions_addopen(&actions, 1, path, create, 0o600)
      posix_spawn_file_actions_adddup2(&actions, 1, 2)
    case .stderrToStdout:
      posix_spawn_file_actions_adddup2(&actions, 2, 1)
    }
    let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] =
      ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv { free(pointer) }
      for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let code = posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
    guard code == 0 else {
      throw CLIError("cannot run \(program): \(String(cString: strerror(code)))")
    }
    return pid
  }
}
