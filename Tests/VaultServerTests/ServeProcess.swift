import ChildProcess
import Foundation
import Testing

/// The real `vault serve` binary as a child process: its one stdout line, then SIGTERM.
/// `@unchecked Sendable`: one test drives it, from one thread at a time.
final class ServeProcess: @unchecked Sendable {
  static let binary: String = {
    // The test bundle and the executable are built into the same directory.
    let exe =
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      ?? CommandLine.arguments[0]
    var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
    while !FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("vault").path),
      dir.path != "/"
    {
      dir.deleteLastPathComponent()
    }
    return dir.appendingPathComponent("vault").path
  }()

  let process: ChildProcess
  /// The base URL the server printed.
  private(set) var baseURL: URL?

  /// Starts `vault serve args...` and waits (at most 20 s) for its first stdout line.
  init(_ args: [String]) throws {
    process = try ChildProcess(
      Self.binary, ["serve"] + args, environment: ["PATH": "/usr/bin:/bin"])
    var line = Data()
    let deadline = Date().addingTimeInterval(20)
    if let handle = process.standardOutput {
      while !line.contains(10) && Date() < deadline && process.isRunning {
        line += handle.availableData
      }
    }
    baseURL = URL(string: String(decoding: line, as: UTF8.self).trimmingCharacters(in: .newlines))
  }

  /// A test that failed before ``terminate()`` must not leave a server running.
  deinit {
    process.signal(SIGKILL)
    process.wait()
  }

  /// Sends SIGTERM and waits (bounded) for the exit.
  /// - Returns: exit status, the rest of stdout after the first line, and stderr.
  func terminate() -> (status: Int32, extraStdout: String, stderr: String) {
    process.signal(SIGTERM)
    if !process.wait(seconds: 15) {
      process.signal(SIGKILL)
      Issue.record("vault serve did not stop on SIGTERM")
    }
    let status = process.wait()
    let rest = String(
      decoding: process.standardOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
    let log = String(
      decoding: process.standardError?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
    return (status, rest, log)
  }
}
