import ChildProcess
import Foundation
import Testing

/// The outcome of one child process.
struct ProcessResult {
  let status: Int32
  let stdout: Data
  let stderr: String
  var text: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs real clients (curl, ffmpeg, ffprobe) and the `vault` binary as child processes.
enum ProcessRunner {
  /// The full path of `tool` on PATH, if installed.
  static func which(_ tool: String) -> String? { ChildProcess.which(tool) }

  static let hasCurl = which("curl") != nil
  static let hasFFmpeg = which("ffmpeg") != nil && which("ffprobe") != nil

  /// Runs `executable args...` to completion, killed after `timeout` seconds. The waiting
  /// happens on a thread of its own: blocking a concurrency-pool thread would starve the
  /// in-process server the child talks to.
  static func run(_ executable: String, _ args: [String], timeout: Double = 60) async throws
    -> ProcessResult
  {
    try await withCheckedThrowingContinuation { continuation in
      Thread {
        continuation.resume(with: Result { try runBlocking(executable, args, timeout: timeout) })
      }.start()
    }
  }

  static func runBlocking(_ executable: String, _ args: [String], timeout: Double) throws
    -> ProcessResult
  {
    let child = try ChildProcess(executable, args)
    let collected = Collected()
    let (out, err) = (child.standardOutput, child.standardError)
    let readers = [
      Thread { collected.set(out: out?.readDataToEndOfFile() ?? Data()) },
      Thread { collected.set(err: err?.readDataToEndOfFile() ?? Data()) },
    ]
    for reader in readers { reader.start() }
    if !child.wait(seconds: timeout) {
      child.signal(SIGINT)
      if !child.wait(seconds: 0.1) { child.signal(SIGKILL) }
      Issue.record("\(executable) \(args) timed out")
    }
    let status = child.wait()
    while !collected.done { usleep(1_000) }
    return ProcessResult(
      status: status, stdout: collected.out, stderr: String(decoding: collected.err, as: UTF8.self))
  }
}

final class Collected: @unchecked Sendable {
  private let lock = NSLock()
  private var outData: Data?
  private var errData: Data?

  func set(out: Data) { lock.withLock { outData = out } }
  func set(err: Data) { lock.withLock { errData = err } }
  var done: Bool { lock.withLock { outData != nil && errData != nil } }
  var out: Data { lock.withLock { outData ?? Data() } }
  var err: Data { lock.withLock { errData ?? Data() } }
}

/// One curl response: status, headers (lowercased names) and body.
struct CurlResponse {
  let status: Int
  let headers: [String: String]
  let body: [UInt8]
}

enum Curl {
  /// `curl URL` with extra arguments; the last header block's status and fields are parsed.
  static func get(_ url: URL, _ extra: [String] = []) async throws -> CurlResponse {
    let bodyFile = FileManager.default.temporaryDirectory
      .appendingPathComponent("curl-body-\(UUID().uuidString)").path
    defer { unlink(bodyFile) }
    let result = try await ProcessRunner.run(
      "curl",
      ["-s", "-S", "--max-time", "30", "-D", "-", "-o", bodyFile] + extra + [url.absoluteString])
    #expect(result.status == 0, "curl failed: \(result.stderr)")
    let text = result.text
    let blocks = text.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
    let lines = (blocks.last ?? "").components(separatedBy: "\r\n")
    let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
        .trimmingCharacters(in: .whitespaces)
    }
    let body = FileManager.default.contents(atPath: bodyFile).map { [UInt8]($0) } ?? []
    return CurlResponse(status: status, headers: headers, body: body)
  }
}
