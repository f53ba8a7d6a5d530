import Foundation
import LoopbackOrigin
import Testing

/// Several `vault` processes on one vault at once: writers of one asset take turns, other
/// commands work alongside, and nothing is corrupted.
@Suite("vault CLI: processes sharing one vault")
struct ConcurrentUseTests {
  /// Runs `vault args...` to completion in the background; collects status and stderr.
  final class Child: @unchecked Sendable {
    let process = Process()
    private let errors = Pipe()
    private(set) var stderr = ""

    init(_ cli: CLI, _ args: [String]) throws {
      process.executableURL = URL(fileURLWithPath: CLI.binary)
      process.arguments = args
      process.environment = cli.environment
      process.currentDirectoryURL = URL(fileURLWithPath: cli.directory)
      process.standardOutput = FileHandle.nullDevice
      process.standardError = errors
      try process.run()
    }

    func wait(timeout: Double = 90) -> Int32 {
      let deadline = Date().addingTimeInterval(timeout)
      while process.isRunning && Date() < deadline { usleep(20_000) }
      if process.isRunning { process.terminate() }
      process.waitUntilExit()
      stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
      return process.terminationStatus
    }
  }

  @Test("three fetches of one asset, an import and a prune at once: all succeed, nothing torn")
  func fetchersImporterPruner() throws {
    let cli = try CLI.initialised()
    defer { cli.cleanup() }
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    let source = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ ($0 >> 11)) }
    origin.serve("/shared.mp4", bytes: source, contentType: "video/mp4", etag: "\"s1\"")
    origin.setBehaviors([.trickle(bytesPerSecond: 6 << 20)], for: "/shared.mp4")
    let url = origin.url("/shared.mp4").absoluteString
    let extra = Data((0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    try extra.write(to: URL(fileURLWithPath: cli.path("extra.bin")))
    #expect(try cli.run(["import", cli.path("extra.bin"), "--pin"]).status == 0)

    var children: [(String, Child)] = []
    for n in 0..<3 {
      // Different ranges of one asset: each process stores what it fetched, in turn.
      let range = ["0-", "1000000-", "2000000-2999999"][n]
      children.append(
        (
          "fetch \(range)",
          try Child(cli, ["fetch", url, "--range", range, "-o", cli.path("f\(n)")])
        )
      )
    }
    children.append(("import", try Child(cli, ["import", cli.path("extra.bin"), "--id", "copy"])))
    children.append(("prune", try Child(cli, ["prune", "--max-bytes", "1GiB"])))
    for (label, child) in children {
      let status = child.wait()
      #expect(status == 0, "\(label): \(child.stderr)")
    }
    let expected: [(Int, Int)] = [
      (0, source.count), (1_000_000, source.count), (2_000_000, 3_000_000),
    ]
    for (n, (start, end)) in expected.enumerated() {
      let got = try Data(contentsOf: URL(fileURLWithPath: cli.path("f\(n)")))
      #expect(got == Data(source[start..<end]), "fetch \(n) returned wrong bytes")
    }
    let verify = try cli.run(["verify"])
    #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    // Every chunk of the asset is stored once, by one writer or another, and opens.
    let offline = try cli.run(["fetch", url, "--offline", "-o", cli.path("all")])
    #expect(offline.status == 0, "\(offline.stderr)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: cli.path("all"))) == Data(source))
  }
}
