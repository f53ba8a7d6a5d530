import Foundation
import LoopbackOrigin
import Testing

/// The kill -9 harness: `vault import`, `vault fetch` (through the range loader), `vault
/// prune`, `vault rm` and `vault shred --expired` run as child processes and are killed with
/// SIGKILL at random points. After every kill the vault must open, verify, and still hold
/// every asset that was complete before, byte for byte; an expired asset being shredded is
/// either still whole (listed, verified) or gone with its file, never half-readable.
///
/// The default run kills 12 times; the full harness is one command:
/// `VAULT_CRASH_RUNS=100 scripts/crash-test` (or the same variable with
/// `swift test --filter CrashTests`).
@Suite("kill -9 at random points: import, fetch, prune, rm, shred")
struct CrashTests {
  static let runs = Int(ProcessInfo.processInfo.environment["VAULT_CRASH_RUNS"] ?? "") ?? 12

  /// Starts `vault args...` without waiting.
  func start(_ cli: CLI, _ args: [String]) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CLI.binary)
    process.arguments = args
    process.environment = cli.environment
    process.currentDirectoryURL = URL(fileURLWithPath: cli.directory)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
  }

  func bytes(_ size: Int, seed: Int) -> Data {
    var state = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
    return Data(
      (0..<size).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
      })
  }

  func listed(_ cli: CLI) throws -> [String: [String: Any]] {
    let list = try cli.run(["list", "--json"])
    #expect(list.status == 0, "the vault did not open after a kill: \(list.stderr)")
    let assets = try JSONSerialization.jsonObject(with: list.stdoutData) as? [[String: Any]]
    var byName: [String: [String: Any]] = [:]
    for asset in assets ?? [] {
      if let name = asset["name"] as? String { byName[name] = asset }
    }
    return byName
  }

  @Test("after each kill: the vault opens and verifies; complete assets stay complete")
  func killNine() throws {
    let cli = try CLI.initialised()
    defer { cli.cleanup() }
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    let remote = bytes(6 << 20, seed: 99)
    origin.serve("/movie.mp4", bytes: Array(remote), contentType: "video/mp4", etag: "\"m1\"")
    origin.setBehaviors([.trickle(bytesPerSecond: 24 << 20)], for: "/movie.mp4")
    let url = origin.url("/movie.mp4").absoluteString

    // Pinned reference assets: nothing may ever take them away.
    var complete: [String: Data] = [:]
    for index in 0..<2 {
      let name = "ref\(index).bin"
      let data = bytes(300_000 + index * 77_777, seed: index)
      try data.write(to: URL(fileURLWithPath: cli.path(name)))
      #expect(try cli.run(["import", cli.path(name), "--pin"]).status == 0)
      complete[name] = data
    }
    let operations = ["import", "fetch", "prune", "rm", "shred"]
    var random = SystemRandomNumberGenerator()
    var kills = 0
    for run in 0..<Self.runs {
      let operation = operations[run % operations.count]
      var args: [String]
      var target: String?
      var window = 0.3
      switch operation {
      case "import":
        let name = "extra\(run).bin"
        let data = bytes(4 << 20, seed: 1000 + run)
        try data.write(to: URL(fileURLWithPath: cli.path(name)))
        args = ["import", cli.path(name)]
        complete[name] = data
        target = name
      case "fetch":
        args = ["fetch", url, "-o", cli.path("fetched.out")]
        window = 0.4
      case "prune":
        args = ["prune", "--max-bytes", "1MiB"]
        window = 0.05
      case "shred":
        // An asset whose lease already ended: `shred --expired` destroys its key, then its file.
        let name = "leased\(run).bin"
        try bytes(2 << 20, seed: 2000 + run).write(to: URL(fileURLWithPath: cli.path(name)))
        let imported = try cli.run(["import", cli.path(name), "--expires", "2000-01-01"])
        #expect(imported.status == 0, "\(imported.stderr)")
        args = ["shred", "--expired"]
        target = name
        window = 0.08
      default:
        let removable = complete.keys.filter { $0.hasPrefix("extra") }.sorted()
        guard let name = removable.first else { continue }
        args = ["rm", name]
        target = name
        window = 0.05
      }
      let before = try listed(cli)
      let process = try start(cli, args)
      usleep(UInt32(Double.random(in: 0..<window, using: &random) * 1_000_000))
      if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        kills += 1
      }
      process.waitUntilExit()

      // The vault opens, and every recorded chunk of every asset opens.
      let after = try listed(cli)
      let verify = try cli.run(["verify"])
      #expect(verify.status == 0, "run \(run) (\(operation)): \(verify.stdout) \(verify.stderr)")
      for (name, data) in complete {
        let wasComplete = (before[name]?["complete"] as? Bool) == true
        guard let asset = after[name] else {
          // Only the operation's own target or prune (of unpinned assets) may remove it.
          let mayGo = name == target || operation == "prune" || !wasComplete
          #expect(mayGo, "run \(run) (\(operation)): \(name) vanished")
          complete[name] = nil
          continue
        }
        if wasComplete || name.hasPrefix("ref") {
          #expect(asset["complete"] as? Bool == true, "run \(run): \(name) is no longer complete")
        }
        guard asset["complete"] as? Bool == true else { continue }
        let out = cli.path("check.out")
        let export = try cli.run(["export", name, "-o", out])
        #expect(export.status == 0, "run \(run): export of \(name): \(export.stderr)")
        let exported = try? Data(contentsOf: URL(fileURLWithPath: out))
        #expect(exported == data, "run \(run) (\(operation)): \(name) differs after the kill")
        try? FileManager.default.removeItem(atPath: out)
      }
      if operation == "import", let target, after[target] == nil { complete[target] = nil }
      if operation == "shred", let target, let asset = after[target] {
        // Not shredded yet: whole, and refused by its lease (verify above opened every chunk).
        #expect(asset["complete"] as? Bool == true, "run \(run): \(target) half-shredded")
        let lease = asset["lease"] as? [String: Any]
        #expect(lease?["status"] as? String == "expired", "run \(run): \(lease ?? [:])")
        #expect(try cli.run(["export", target, "-o", cli.path("check.out")]).status != 0)
      }
    }
    // No leftovers: every file in chunks/ belongs to a listed asset.
    let files = try FileManager.default.subpathsOfDirectory(atPath: cli.path("v/chunks"))
      .filter { $0.count > 3 }
    #expect(files.count == (try listed(cli)).count, "\(files)")
    #expect(kills > 0, "no run was killed: the harness tested nothing")
  }

  @Test("kill -9 between the key's destruction and the unlink: shredded, file gone on open")
  func killBetweenKeyAndUnlink() throws {
    let cli = try CLI.initialised()
    defer { cli.cleanup() }
    try bytes(500_000, seed: 7).write(to: URL(fileURLWithPath: cli.path("x.bin")))
    #expect(try cli.run(["import", cli.path("x.bin"), "--expires", "2000-01-01"]).status == 0)
    #expect(try cli.run(["import", cli.path("x.bin"), "--id", "keep"]).status == 0)
    let files = {
      try FileManager.default.subpathsOfDirectory(atPath: cli.path("v/chunks")).filter {
        $0.count > 3
      }
    }
    #expect(try files().count == 2)
    var environment = cli.environment
    environment["VAULT_TEST_CRASH_AT"] = "shred-after-key"
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CLI.binary)
    process.arguments = ["shred", "--expired"]
    process.environment = environment
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL)
    // The key went first: the file is still there, with nothing that can open it.
    #expect(try files().count == 2)
    let after = try listed(cli)
    #expect(after.keys.sorted() == ["keep"])
    #expect(try cli.run(["verify"]).status == 0)
    #expect(try files().count == 1)  // the orphan was removed when the vault was opened
  }
}
