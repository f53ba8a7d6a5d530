import Foundation
import Testing

@Suite("vault CLI: pin, prune, stats, limits, verify --repair, disk full")
struct CachePolicyCLITests {
  func initialised() throws -> CLI { try CLI.initialised() }

  func write(_ cli: CLI, _ name: String, size: Int, seed: UInt8) throws -> Data {
    let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    try data.write(to: URL(fileURLWithPath: cli.path(name)))
    return data
  }

  func names(_ cli: CLI) throws -> [String] {
    let list = try cli.run(["list", "--json"])
    let assets = try JSONSerialization.jsonObject(with: list.stdoutData) as? [[String: Any]]
    return (assets ?? []).compactMap { $0["name"] as? String }.sorted()
  }

  @Test("prune --dry-run, prune, pin, --pin on import, stats --json, config set/unset")
  func pruneAndPin() throws {
    let cli = try initialised()
    defer { cli.cleanup() }
    for (index, name) in ["a.bin", "b.bin", "c.bin"].enumerated() {
      _ = try write(cli, name, size: 64 << 10, seed: UInt8(index))
      let flags = name == "a.bin" ? ["--pin"] : []
      #expect(try cli.run(["import", cli.path(name)] + flags).status == 0)
      usleep(20_000)
    }
    let dry = try cli.run(["prune", "--max-bytes", "140KiB", "--dry-run", "--json"])
    #expect(dry.status == 0, "\(dry.stderr)")
    let report = try #require(
      try JSONSerialization.jsonObject(with: dry.stdoutData) as? [String: Any])
    let evicted = (report["evicted"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
    // a is pinned; b is the least recently used of the rest; b alone frees enough.
    #expect(evicted == ["b.bin"])
    #expect(try names(cli) == ["a.bin", "b.bin", "c.bin"])

    #expect(try cli.run(["pin", "b.bin"]).status == 0)
    let pinnedAll = try cli.run(["prune", "--max-bytes", "1KiB"])
    #expect(pinnedAll.status == 0)
    #expect(pinnedAll.stdout.contains("evicted 1 assets"))
    #expect(pinnedAll.stderr.contains("pinned assets alone take"))
    #expect(try names(cli) == ["a.bin", "b.bin"])
    #expect(try cli.run(["unpin", "b.bin"]).status == 0)

    // A limit in the config is enforced by the import that crosses it.
    #expect(try cli.run(["config", "set", "max-bytes", "150KiB"]).status == 0)
    _ = try write(cli, "d.bin", size: 64 << 10, seed: 9)
    #expect(try cli.run(["import", cli.path("d.bin")]).status == 0)
    #expect(try names(cli) == ["a.bin", "d.bin"])
    let stats = try cli.run(["stats", "--json"])
    let figures = try #require(
      try JSONSerialization.jsonObject(with: stats.stdoutData) as? [String: Any])
    #expect(figures["assets"] as? Int == 2)
    #expect(figures["pinnedAssets"] as? Int == 1)
    #expect(figures["evictions"] as? Int == 2)
    #expect((figures["limits"] as? [String: Any])?["maxBytes"] as? Int == 150 << 10)
    #expect(try cli.run(["stats"]).stdout.contains("max-bytes 150.0 KiB"))
    #expect(try cli.run(["config", "unset", "max-bytes"]).status == 0)
    #expect(try cli.run(["config", "show"]).stdout.contains("max-bytes none"))

    // Bad input: one line each, nothing changed.
    expectOneLineError(
      try cli.run(["config", "set", "max-bytes", "lots"]), containing: "not a size")
    expectOneLineError(try cli.run(["config", "set", "max-age", "soon"]), containing: "duration")
    expectOneLineError(try cli.run(["config", "set", "colour", "red"]), containing: "unknown")
    expectOneLineError(try cli.run(["prune"]), containing: "no limit")
    expectOneLineError(try cli.run(["pin", "a.bin", "nope"]), containing: "nope")
    expectOneLineError(
      try cli.run(["prune", "--max-bytes", "99999999999999999999G"]), containing: "max-bytes")
    #expect(try names(cli) == ["a.bin", "d.bin"])
  }

  @Test("verify --repair drops a damaged chunk of an imported asset and says it is missing")
  func verifyRepairImported() throws {
    let cli = try initialised()
    defer { cli.cleanup() }
    _ = try write(cli, "x.bin", size: 80 << 10, seed: 4)
    #expect(try cli.run(["import", cli.path("x.bin")]).status == 0)
    let chunks = cli.path("v/chunks")
    let shard = try #require(try FileManager.default.contentsOfDirectory(atPath: chunks).first)
    let file = try #require(
      try FileManager.default.contentsOfDirectory(atPath: chunks + "/" + shard).first)
    let path = chunks + "/" + shard + "/" + file
    var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    bytes[128 + (16_384 + 28) + 50] ^= 0x01
    try bytes.write(to: URL(fileURLWithPath: path))
    let repaired = try cli.run(["verify", "--repair"])
    #expect(repaired.status != 0)
    #expect(repaired.stdout.contains("damaged chunks 1 dropped"))
    // What is left verifies; the dropped chunk is reported missing, never served.
    #expect(try cli.run(["verify"]).status == 0)
    expectOneLineError(
      try cli.run(["export", "x.bin", "-o", cli.path("out.bin")]), containing: "not stored")
    #expect(!FileManager.default.fileExists(atPath: cli.path("out.bin")))
  }

  /// Mounts a small tmpfs (root only); nil where that is not allowed.
  static func mountSmallDisk(_ path: String, megabytes: Int) -> Bool {
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let mount = Process()
    mount.executableURL = URL(fileURLWithPath: "/bin/mount")
    mount.arguments = ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path]
    mount.standardError = FileHandle.nullDevice
    guard (try? mount.run()) != nil else { return false }
    mount.waitUntilExit()
    return mount.terminationStatus == 0
  }

  static func unmount(_ path: String) {
    let umount = Process()
    umount.executableURL = URL(fileURLWithPath: "/bin/umount")
    umount.arguments = ["-l", path]
    try? umount.run()
    umount.waitUntilExit()
  }

  static let canMount: Bool = {
    guard getuid() == 0 else { return false }
    let probe = FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-mount-probe-\(getpid())").path
    defer {
      unmount(probe)
      try? FileManager.default.removeItem(atPath: probe)
    }
    return mountSmallDisk(probe, megabytes: 1)
  }()

  @Test(
    "disk full: a clear error, nothing stored is lost, the vault opens afterwards",
    .enabled(if: canMount, "needs root to mount a small tmpfs"))
  func diskFull() throws {
    var cli = try CLI()
    defer { cli.cleanup() }
    let disk = cli.path("disk")
    #expect(Self.mountSmallDisk(disk, megabytes: 4))
    defer { Self.unmount(disk) }
    cli.environment["VAULT_DIR"] = disk + "/v"
    cli.environment["VAULT_KEY_FILE"] = cli.path("v.key")
    #expect(try cli.run(["init", "--chunk-size", "16KiB"]).status == 0)
    let small = try write(cli, "small.bin", size: 1 << 20, seed: 1)
    #expect(try cli.run(["import", cli.path("small.bin")]).status == 0)
    _ = try write(cli, "big.bin", size: 6 << 20, seed: 2)
    let full = try cli.run(["import", cli.path("big.bin")])
    expectOneLineError(full, containing: "No space left on device")
    // The earlier asset is intact, the failed one left nothing behind, the vault opens.
    #expect(try names(cli) == ["small.bin"])
    #expect(try cli.run(["verify"]).status == 0)
    #expect(try cli.run(["export", "small.bin", "-o", cli.path("small.out")]).status == 0)
    #expect(try Data(contentsOf: URL(fileURLWithPath: cli.path("small.out"))) == small)
    let leftovers = try FileManager.default.subpathsOfDirectory(atPath: disk + "/v/chunks")
      .filter { $0.count > 3 }
    #expect(leftovers.count == 1, "\(leftovers)")
    // Once there is room again, the import works.
    #expect(try cli.run(["rm", "small.bin"]).status == 0)
    _ = try write(cli, "fits.bin", size: 2 << 20, seed: 3)
    #expect(try cli.run(["import", cli.path("fits.bin")]).status == 0)
  }
}
