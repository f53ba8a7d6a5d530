import ChildProcess
import Foundation
import LoopbackOrigin
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A failure of the test harness itself (a client that could not run or timed out).
struct HarnessError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Deterministic bytes where every offset differs from its neighbours.
func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
  (0..<count).map { UInt8(truncatingIfNeeded: (($0 &+ seed) &* 2_654_435_761) >> 13) }
}

/// A directory under the temporary directory, removed by ``cleanup()``.
struct TempDirectory {
  let path: String

  init() throws {
    path = NSTemporaryDirectory() + "loopback-origin-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  func file(_ name: String) -> String { path + "/" + name }

  func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}

/// What a finished curl run left behind.
struct CurlOutput {
  var exitCode: Int32
  var stdout: String
  var stderr: String
  var elapsed: Double
}

/// One response as curl saw it: `-D` headers of the last response and the `-o` body.
struct CurlResponse {
  var exitCode: Int32
  var status: Int
  /// The last response's header lines exactly as received (without the status line).
  var headerLines: [String]
  /// The last response's headers keyed by lowercased name.
  var headers: [String: String]
  var body: [UInt8]
  var stdout: String
  var stderr: String
  var elapsed: Double
}

/// curl as a child process, always bounded by a timeout.
enum Curl {
  static let executable = "/usr/bin/curl"

  /// A curl process that is running.
  final class Running: Sendable {
    private let process: ChildProcess
    private let arguments: [String]
    private let directory: TempDirectory
    private let started: Double

    init(_ arguments: [String]) throws {
      directory = try TempDirectory()
      self.arguments = arguments
      started = Date().timeIntervalSinceReferenceDate
      process = try ChildProcess(
        Curl.executable, arguments, stdout: .file(directory.file("out")),
        stderr: .file(directory.file("err")))
    }

    /// Waits for curl to exit (killing it after `timeout` seconds, which fails the test).
    func wait(timeout: Double = 10) throws -> CurlOutput {
      defer { directory.cleanup() }
      if !process.wait(seconds: timeout) {
        process.signal(SIGTERM)
        if !process.wait(seconds: 2) { process.signal(SIGKILL) }
        process.wait()
        throw HarnessError("curl \(arguments) did not finish in \(timeout) s")
      }
      let elapsed = Date().timeIntervalSinceReferenceDate - started
      let read = { (name: String) in
        (try? String(contentsOfFile: self.directory.file(name), encoding: .utf8)) ?? ""
      }
      return CurlOutput(
        exitCode: process.terminationStatus, stdout: read("out"), stderr: read("err"),
        elapsed: elapsed)
    }
  }

  /// Runs curl with exactly these arguments.
  static func run(_ arguments: [String], timeout: Double = 10) throws -> CurlOutput {
    try Running(arguments).wait(timeout: timeout)
  }

  /// Fetches one URL (`-sS`, no redirects unless `extra` says so) and parses what came back.
  static func fetch(_ url: URL, _ extra: [String] = [], timeout: Double = 10) throws
    -> CurlResponse
  {
    let files = try TempDirectory()
    defer { files.cleanup() }
    let output = try run(
      ["-sS", "-D", files.file("headers"), "-o", files.file("body")] + extra + [url.absoluteString],
      timeout: timeout)
    let headerText = (try? String(contentsOfFile: files.file("headers"), encoding: .utf8)) ?? ""
    let body = FileManager.default.contents(atPath: files.file("body")).map { [UInt8]($0) } ?? []
    let (status, lines) = lastResponse(headerText)
    var headers: [String: String] = [:]
    for line in lines {
      guard let colon = line.firstIndex(of: ":") else { continue }
      let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
      headers[line[..<colon].lowercased()] = value
    }
    return CurlResponse(
      exitCode: output.exitCode, status: status, headerLines: lines, headers: headers, body: body,
      stdout: output.stdout, stderr: output.stderr, elapsed: output.elapsed)
  }

  /// The status and header lines of the last response in a `-D` dump.
  private static func lastResponse(_ text: String) -> (Int, [String]) {
    var status = 0
    var lines: [String] = []
    for raw in text.replacingOccurrences(of: "\r\n", with: "\n").split(
      separator: "\n", omittingEmptySubsequences: false)
    {
      let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : String(raw)
      if line.hasPrefix("HTTP/") {
        let parts = line.split(separator: " ")
        status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        lines = []
      } else if !line.isEmpty {
        lines.append(line)
      }
    }
    return (status, lines)
  }
}

/// A plain TCP client for what curl will not send (malformed heads, pipelining, silence).
final class RawClient {
  private let descriptor: Int32

  init(port: UInt16) throws {
    descriptor = try Self.connectedSocket(port: port)
  }

  /// A connected socket (a throwing class initializer would run `deinit`, closing twice).
  private static func connectedSocket(port: UInt16) throws -> Int32 {
    #if canImport(Glibc)
      let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
      let descriptor = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard descriptor >= 0 else { throw HarnessError("socket: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard result == 0 else {
      let code = errno
      _ = close(descriptor)
      throw HarnessError("connect: errno \(code)")
    }
    return descriptor
  }

  deinit { _ = close(descriptor) }

  /// Whether a connection to `port` on 127.0.0.1 is accepted.
  static func canConnect(port: UInt16) -> Bool { (try? RawClient(port: port)) != nil }

  func send(_ text: String) throws {
    let bytes = Array(text.utf8)
    #if canImport(Glibc)
      let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
    #else
      let sent = bytes.withUnsafeBytes { Darwin.send(descriptor, $0.baseAddress, $0.count, 0) }
    #endif
    guard sent == bytes.count else { throw HarnessError("send: errno \(errno)") }
  }

  /// Reads until the server closes or `timeout` seconds pass; `closed` says which.
  func readAll(timeout: Double) -> (text: String, closed: Bool) {
    var received: [UInt8] = []
    let deadline = Date().addingTimeInterval(timeout)
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let remaining = deadline.timeIntervalSinceNow
      if remaining <= 0 { return (String(decoding: received, as: UTF8.self), false) }
      var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
      guard poll(&fds, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
      let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      if count <= 0 { return (String(decoding: received, as: UTF8.self), true) }
      received.append(contentsOf: chunk[0..<count])
    }
  }
}

/// Anonymous resident memory of this process (heap, not file cache), from /proc.
func residentAnonymousBytes() -> Int? {
  guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else {
    return nil
  }
  for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") {
    let number = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
    return number.map { $0 * 1024 }
  }
  return nil
}

extension LoopbackOrigin {
  /// Waits (at most `timeout` seconds) until `condition` holds.
  func waitUntil(timeout: Double = 5, _ condition: (LoopbackOrigin) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if condition(self) { return true }
      usleep(5_000)
    }
    return condition(self)
  }
}

/// Collects the origin's log lines.
final class LogLines: Sendable {
  private let lines = LockedBox<[String]>([])

  var all: [String] { lines.withLock { $0 } }

  @Sendable func append(_ line: String) { lines.withLock { $0.append(line) } }

  /// Waits (at most `timeout` seconds) for a line containing `text`.
  func wait(for text: String, timeout: Double) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
      if all.contains(where: { $0.contains(text) }) { return true }
      usleep(5_000)
    } while Date() < deadline
    return false
  }
}

/// Bytes as a short string (length and FNV-1a hash), so failed comparisons print briefly.
func summary<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
  var hash: UInt64 = 0xcbf2_9ce4_8422_2325
  for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
  return "\(bytes.count) bytes, hash \(String(hash, radix: 16))"
}

/// A value behind an `NSLock` (the `Synchronization` module needs macOS 15).
final class LockedBox<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<R>(_ body: (inout Value) -> R) -> R {
    lock.lock()
    defer { lock.unlock() }
    return body(&value)
  }
}

/// A file of `size` zero bytes that takes no disk space.
func makeSparseFile(_ path: String, size: Int) throws {
  guard FileManager.default.createFile(atPath: path, contents: nil),
    truncate(path, off_t(size)) == 0
  else { throw HarnessError("cannot create \(path)") }
}
