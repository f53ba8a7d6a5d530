import Foundation
import Testing

/// The result of one `vault` run.
struct CLIResult {
  let status: Int32
  let stdout: String
  let stderr: String
  let stdoutData: Data
}

/// Runs the `vault` binary built next to this test bundle.
struct CLI {
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

  static let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

  let directory: String
  var environment: [String: String]

  init() throws {
    directory =
      FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-cli-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    environment = ["PATH": "/usr/bin:/bin", "HOME": directory]
  }

  func path(_ name: String) -> String { directory + "/" + name }

  /// A CLI whose environment names a fresh vault (`v`, 16 KiB chunks) and its new key
  /// (`v.key`), created with `vault init`.
  static func initialised(sourceLocation: SourceLocation = #_sourceLocation) throws -> CLI {
    var cli = try CLI()
    cli.environment["VAULT_DIR"] = cli.path("v")
    cli.environment["VAULT_KEY_FILE"] = cli.path("v.key")
    let result = try cli.run(["init", "--chunk-size", "16KiB"])
    #expect(result.status == 0, "\(result.stderr)", sourceLocation: sourceLocation)
    return cli
  }

  func cleanup() { try? FileManager.default.removeItem(atPath: directory) }

  /// Runs `vault args...`, feeding `stdin` if given; bounded by `timeout` seconds.
  @discardableResult
  func run(_ args: [String], stdin: Data? = nil, timeout: Double = 60) throws -> CLIResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Self.binary)
    process.arguments = args
    process.environment = environment
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    let out = Pipe()
    let err = Pipe()
    let input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    let stdinData = stdin
    let feeder = Thread {
      if let stdinData { input.fileHandleForWriting.write(stdinData) }
      try? input.fileHandleForWriting.close()
    }
    feeder.start()
    let collected = OutputCollector()
    let readers = [
      Thread { collected.setOut(out.fileHandleForReading.readDataToEndOfFile()) },
      Thread { collected.setErr(err.fileHandleForReading.readDataToEndOfFile()) },
    ]
    for reader in readers { reader.start() }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning {
      let stacks = Self.backtrace(of: process.processIdentifier)
      Issue.record("vault \(args) timed out\n\(stacks)")
      process.terminate()
    }
    process.waitUntilExit()
    while !collected.done { usleep(1_000) }
    return CLIResult(
      status: process.terminationStatus, stdout: String(decoding: collected.out, as: UTF8.self),
      stderr: String(decoding: collected.err, as: UTF8.self), stdoutData: collected.out)
  }
}

extension CLI {
  /// Every thread's stack of a hung child, when gdb is installed (for the failure message).
  static func backtrace(of pid: Int32) -> String {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return "" }
    let gdb = Process()
    gdb.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
    gdb.arguments = [
      "20", "/usr/bin/gdb", "-p", "\(pid)", "-batch", "-ex", "thread apply all bt 12",
    ]
    let out = Pipe()
    gdb.standardOutput = out
    gdb.standardError = FileHandle.nullDevice
    guard (try? gdb.run()) != nil else { return "" }
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    gdb.waitUntilExit()
    return text.split(separator: "\n").filter { $0.hasPrefix("#") || $0.hasPrefix("Thread") }
      .prefix(200).joined(separator: "\n")
  }
}

private final class OutputCollector: @unchecked Sendable {
  private let lock = NSLock()
  private var outData: Data?
  private var errData: Data?

  func setOut(_ data: Data) { lock.withLock { outData = data } }
  func setErr(_ data: Data) { lock.withLock { errData = data } }
  var done: Bool { lock.withLock { outData != nil && errData != nil } }
  var out: Data { lock.withLock { outData ?? Data() } }
  var err: Data { lock.withLock { errData ?? Data() } }
}

/// Expects a clean failure: non-zero exit, exactly one line on stderr containing `fragment`,
/// and no crash report.
func expectOneLineError(
  _ result: CLIResult, containing fragment: String,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  #expect(
    result.status != 0, "expected failure, stdout: \(result.stdout)", sourceLocation: sourceLocation
  )
  let lines = result.stderr.split(separator: "\n")
  #expect(lines.count == 1, "stderr was: \(result.stderr)", sourceLocation: sourceLocation)
  #expect(
    result.stderr.contains(fragment), "stderr was: \(result.stderr)", sourceLocation: sourceLocation
  )
  #expect(
    !result.stderr.contains("Fatal error") && !result.stderr.contains("Backtrac"),
    sourceLocation: sourceLocation)
}
