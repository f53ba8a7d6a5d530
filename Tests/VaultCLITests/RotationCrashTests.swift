import Foundation
import Testing

/// Crash safety of `vault key rotate` and `vault key rotate --reencrypt`: the built binary
/// runs as a child process and is killed with SIGKILL at named points (`VAULT_TEST_CRASH_AT`)
/// and after random delays. After every kill the vault must open with the key file (old or
/// new key; with `--retire-old` the staged new key may be the one), `vault verify` must
/// pass, every asset must export byte-identical, and rerunning the command must finish the
/// job.
///
/// Runs repeat until that many kills landed mid-run (at most twice as many runs).
/// Default: 10 kills per operation. Full count (documented in README.md):
/// `VAULT_CRASH_RUNS=100 swift test --filter RotationCrashTests` (or `scripts/crash-rotate`).
@Suite("Key rotation crash safety", .serialized)
struct RotationCrashTests {
  static let runs = Int(ProcessInfo.processInfo.environment["VAULT_CRASH_RUNS"] ?? "") ?? 10

  static let rotatePoints = [
    "rotate-after-new-key-file", "rotate-after-commit", "rotate-after-backup",
    "rotate-after-swap",
  ]
  static let reencryptPoints = [
    "reencrypt-after-enqueue", "reencrypt-mid-file", "reencrypt-before-flip",
    "reencrypt-after-flip",
  ]

  /// A vault (`v`, key `v.key`) with a 12 MiB asset, a few odd sizes and 60 tiny assets.
  func template() throws -> (CLI, [String: Data]) {
    var cli = try CLI()
    cli.environment["VAULT_DIR"] = cli.path("t/v")
    cli.environment["VAULT_KEY_FILE"] = cli.path("t/v.key")
    try FileManager.default.createDirectory(
      atPath: cli.path("t"), withIntermediateDirectories: true)
    #expect(try cli.run(["init", "--chunk-size", "16KiB"]).status == 0)
    var sources: [String: Data] = [:]
    var sizes = [("big.bin", 12 << 20), ("mid.bin", 300_001), ("one.bin", 16_384), ("empty", 0)]
    sizes += (0..<60).map { ("tiny\($0)", 100 + $0) }
    var state: UInt64 = 0x1234_5678
    for (name, size) in sizes {
      var bytes = [UInt8](repeating: 0, count: size)
      for i in 0..<size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[i] = UInt8(truncatingIfNeeded: state >> 33)
      }
      let data = Data(bytes)
      let file = cli.path("src-\(name)")
      try data.write(to: URL(fileURLWithPath: file))
      let imported = try cli.run(["import", file, "--id", name])
      #expect(imported.status == 0, "\(imported.stderr)")
      sources[name] = data
    }
    return (cli, sources)
  }

  /// A fresh copy of the template in `run-N`; returns a CLI pointed at it.
  func copy(_ template: CLI, run: Int) throws -> CLI {
    var cli = template
    let dir = template.path("run-\(run)")
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.copyItem(atPath: template.path("t"), toPath: dir)
    cli.environment["VAULT_DIR"] = dir + "/v"
    cli.environment["VAULT_KEY_FILE"] = dir + "/v.key"
    return cli
  }

  /// Runs the binary with `args`, killing it with SIGKILL after `delay` seconds (if it has
  /// not exited) or at the named crash point. Returns whether it was killed.
  @discardableResult
  func runAndKill(_ cli: CLI, _ args: [String], delay: Double?, point: String?) throws -> Bool {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CLI.binary)
    process.arguments = args
    var environment = cli.environment
    if let point { environment["VAULT_TEST_CRASH_AT"] = point }
    process.environment = environment
    process.currentDirectoryURL = URL(fileURLWithPath: cli.directory)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    if let delay {
      usleep(useconds_t(delay * 1_000_000))
      kill(process.processIdentifier, SIGKILL)
    }
    process.waitUntilExit()
    return process.terminationReason == .uncaughtSignal
  }

  func keyStatus(_ cli: CLI, key: String) throws -> [String: Any]? {
    let result = try cli.run(["key", "status", "--json", "--key-file", key])
    guard result.status == 0 else { return nil }
    return try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any]
  }

  /// The invariants after a kill (or a finished run), checked with the key `key`.
  func expectWhole(
    _ cli: CLI, key: String, _ sources: [String: Data], context: String,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let verify = try cli.run(["verify", "--key-file", key])
    #expect(
      verify.status == 0, "\(context): verify: \(verify.stderr)", sourceLocation: sourceLocation)
    for name in ["big.bin", "mid.bin", "one.bin", "empty", "tiny7"] {
      // To a file: decoding megabytes of binary stdout as a String is very slow.
      let out = cli.path("exported.bin")
      try? FileManager.default.removeItem(atPath: out)
      let exported = try cli.run(["export", name, "--key-file", key, "-o", out])
      #expect(
        exported.status == 0
          && FileManager.default.contents(atPath: out) == sources[name],
        "\(context): export \(name): \(exported.stderr)", sourceLocation: sourceLocation)
    }
  }

  /// Plan for run `i`: a named point first, then random delays up to `window` seconds.
  func plan(_ i: Int, points: [String], window: Double) -> (delay: Double?, point: String?) {
    if i < points.count { return (nil, points[i]) }
    return (Double.random(in: 0...window), nil)
  }

  /// Shrinks the random window when a run finished before its kill, widens it a little when
  /// the kill landed: the machine's load changes during a long run, and with it how long
  /// the command takes, so a fixed window would drift past the end (or stay near the start).
  static func adapt(_ window: Double, killed: Bool) -> Double {
    killed ? window * 1.05 : window * 0.8
  }

  /// Measures a clean run of `args` on a copy, for the random delay window.
  func cleanDuration(_ template: CLI, _ args: [String]) throws -> Double {
    let cli = try copy(template, run: -1)
    let start = Date()
    let result = try cli.run(args)
    #expect(result.status == 0, "\(result.stderr)")
    return Date().timeIntervalSince(start)
  }

  @Test("SIGKILL during vault key rotate: opens with old or new key, rerun finishes")
  func killRotate() throws {
    let (template, sources) = try template()
    defer { template.cleanup() }
    let original = try #require(
      try keyStatus(template, key: template.path("t/v.key"))?["activeKeyID"] as? String)
    var window = try cleanDuration(template, ["key", "rotate"]) * 0.9
    var killed = 0
    var i = 0
    // Until `runs` kills landed mid-run (a random delay past the end counts as no kill).
    while killed < Self.runs && i < 2 * Self.runs {
      defer { i += 1 }
      let cli = try copy(template, run: i)
      let key = try #require(cli.environment["VAULT_KEY_FILE"])
      // Every third run also retires the old key, whose file then opens nothing.
      let retire = i % 3 == 2
      let args = ["key", "rotate"] + (retire ? ["--retire-old"] : [])
      let (delay, point) = plan(i, points: Self.rotatePoints, window: window)
      let context = "run \(i) \(args) \(point ?? String(format: "%.3fs", delay ?? 0))"
      let wasKilled = try runAndKill(cli, args, delay: delay, point: point)
      if wasKilled { killed += 1 }
      if delay != nil { window = Self.adapt(window, killed: wasKilled) }
      // Opens with the old or the new key: the key file, or (retire) the staged new key.
      let candidates = [key] + (retire ? [key + ".new"] : [])
      let opener = try candidates.first { try keyStatus(cli, key: $0) != nil }
      #expect(opener != nil, "\(context): no key opens the vault")
      if !retire { #expect(opener == key, "\(context): the key file does not open the vault") }
      if let opener { try expectWhole(cli, key: opener, sources, context: context) }
      // Rerunning finishes the job: the key file holds the active key, which is new.
      let rerun = try cli.run(args)
      #expect(rerun.status == 0, "\(context): rerun: \(rerun.stderr)")
      let status = try #require(try keyStatus(cli, key: key), "\(context)")
      #expect(
        status["activeKeyID"] as? String == status["openedWithKeyID"] as? String, "\(context)")
      #expect(status["activeKeyID"] as? String != original, "\(context)")
      #expect(!FileManager.default.fileExists(atPath: key + ".new"), "\(context)")
      try expectWhole(cli, key: key, sources, context: context + " after rerun")
      try? FileManager.default.removeItem(atPath: FileManagerPath.parent(key))
    }
    print("killRotate: \(i) runs, \(killed) killed mid-run")
    #expect(killed >= Self.runs)
  }

  @Test("SIGKILL during vault key rotate --reencrypt: stays whole, rerun finishes")
  func killReencrypt() throws {
    let (template, sources) = try template()
    defer { template.cleanup() }
    let args = ["key", "rotate", "--reencrypt"]
    var window = try cleanDuration(template, args) * 0.9
    var killed = 0
    var i = 0
    while killed < Self.runs && i < 2 * Self.runs {
      defer { i += 1 }
      let cli = try copy(template, run: i)
      let key = try #require(cli.environment["VAULT_KEY_FILE"])
      let (delay, point) = plan(i, points: Self.reencryptPoints, window: window)
      let context = "run \(i) \(point ?? String(format: "%.3fs", delay ?? 0))"
      let wasKilled = try runAndKill(cli, args, delay: delay, point: point)
      if wasKilled { killed += 1 }
      if delay != nil { window = Self.adapt(window, killed: wasKilled) }
      #expect(try keyStatus(cli, key: key) != nil, "\(context): the key does not open the vault")
      try expectWhole(cli, key: key, sources, context: context)
      let rerun = try cli.run(args)
      #expect(rerun.status == 0, "\(context): rerun: \(rerun.stderr)")
      let status = try #require(try keyStatus(cli, key: key), "\(context)")
      #expect(status["reencryptionPending"] as? Int == 0, "\(context)")
      let list = try cli.run(["list", "--json"])
      let assets = try #require(
        try JSONSerialization.jsonObject(with: list.stdoutData) as? [[String: Any]])
      #expect(assets.count == sources.count, "\(context)")
      #expect(assets.allSatisfy { ($0["generation"] as? Int ?? 0) >= 2 }, "\(context)")
      // No leftover generations: exactly one sealed file per asset.
      let chunks = try #require(cli.environment["VAULT_DIR"]) + "/chunks"
      let files = (FileManager.default.subpaths(atPath: chunks) ?? []).filter {
        $0.split(separator: "/").last?.split(separator: ".").count == 2
      }
      #expect(files.count == sources.count, "\(context): files \(files.count)")
      try expectWhole(cli, key: key, sources, context: context + " after rerun")
      try? FileManager.default.removeItem(atPath: FileManagerPath.parent(key))
    }
    print("killReencrypt: \(i) runs, \(killed) killed mid-run")
    #expect(killed >= Self.runs)
  }
}

/// Path helpers for the harness.
enum FileManagerPath {
  static func parent(_ path: String) -> String {
    URL(fileURLWithPath: path).deletingLastPathComponent().path
  }
}
