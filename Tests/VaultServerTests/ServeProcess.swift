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

  let process = Process()
  private let out = Pipe()
  private let err = Pipe()
  /// The base URL the server printed.
  private(set) var baseURL: URL?

  /// Starts `vault serve args...` and waits (at most 20 s) for its first stdout line.
  init(_ args: [String]) throws {
    process.executableURL = URL(fileURLWithPath: Self.binary)
    process.arguments = ["serve"] + args
    process.environment = ["PATH": "/usr/bin:/bin"]
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    var line = Data()
    let deadline = Date().addingTimeInterval(20)
    let handle = out.fileHandleForReading
    while !line.contains(10) && Date() < deadline && process.isRunning {
      line += handle.availableData
    }
    baseURL = URL(string: String(decoding: line, as: UTF8.self).trimmingCharacters(in: .newlines))
  }

  /// A test that failed before ``terminate()`` must not leave a server running.
  deinit {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  }

  /// Sends SIGTERM and waits (bounded) for the exit.
  /// - Returns: exit status, the rest of stdout after the first line, and stderr.
  func terminate() -> (status: Int32, extraStdout: String, stderr: String) {
    process.terminate()
    let deadline = Date().addingTimeInterval(15)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      Issue.record("vault serve did not stop on SIGTERM")
    }
    process.waitUntilExit()
    let rest = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return (process.terminationStatus, rest, log)
  }
}
