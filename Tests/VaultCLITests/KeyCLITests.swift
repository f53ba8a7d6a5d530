import Foundation
import Testing

/// `vault key rotate|retire|passwd|status` as a user runs them, and their bad inputs.
@Suite("vault key CLI", .serialized)
struct KeyCLITests {
  /// A vault with two assets; returns the CLI and the sources by name.
  func populated(passphrase: String? = nil) throws -> (CLI, [String: Data]) {
    var cli = try CLI()
    cli.environment["VAULT_DIR"] = cli.path("v")
    cli.environment["VAULT_KEY_FILE"] = cli.path("v.key")
    if let passphrase { cli.environment["VAULT_PASSPHRASE"] = passphrase }
    let initialised = try cli.run(["init", "--chunk-size", "16KiB"])
    #expect(initialised.status == 0, "\(initialised.stderr)")
    var sources: [String: Data] = [:]
    for (name, size) in [("a.bin", 50_000), ("b.bin", 10)] {
      let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) })
      try data.write(to: URL(fileURLWithPath: cli.path(name)))
      #expect(try cli.run(["import", name]).status == 0)
      sources[name] = data
    }
    return (cli, sources)
  }

  func status(_ cli: CLI, key: String? = nil) throws -> [String: Any] {
    let result = try cli.run(["key", "status", "--json"] + (key.map { ["--key-file", $0] } ?? []))
    #expect(result.status == 0, "\(result.stderr)")
    return try #require(try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any])
  }

  func expectUnchanged(_ cli: CLI, _ before: [String: Any], _ sources: [String: Data]) throws {
    let after = try status(cli)
    #expect(after["activeKeyID"] as? String == before["activeKeyID"] as? String)
    #expect((after["keys"] as? [Any])?.count == (before["keys"] as? [Any])?.count)
    for (name, data) in sources { #expect(try cli.run(["export", name]).stdoutData == data) }
  }

  @Test("rotate swaps the key file, keeps the old one decrypt-only; retire ends it")
  func rotateStatusRetire() throws {
    let (cli, sources) = try populated()
    defer { cli.cleanup() }
    let oldID = try #require(try status(cli)["activeKeyID"] as? String)
    let rotated = try cli.run(["key", "rotate"])
    #expect(rotated.status == 0, "\(rotated.stderr)")
    let backup = cli.path("v.key.old-\(oldID)")
    #expect(FileManager.default.fileExists(atPath: backup))
    #expect(!FileManager.default.fileExists(atPath: cli.path("v.key.new")))
    let now = try status(cli)
    let newID = try #require(now["activeKeyID"] as? String)
    #expect(newID != oldID && now["formatVersion"] as? Int == 2)
    let keys = try #require(now["keys"] as? [[String: Any]])
    #expect(keys.map { $0["state"] as? String } == ["active", "decryptOnly"])
    #expect(keys.map { $0["assets"] as? Int } == [2, 2])
    for (name, data) in sources {
      #expect(try cli.run(["export", name]).stdoutData == data)
      #expect(try cli.run(["export", name, "--key-file", backup]).stdoutData == data)
    }
    let text = try cli.run(["key", "status"])
    #expect(text.stdout.contains("decrypt-only  \(oldID)"))
    // The old key may read but not write.
    expectOneLineError(
      try cli.run(["import", "a.bin", "--id", "late", "--key-file", backup]),
      containing: "decrypt")
    #expect(try cli.run(["key", "retire"]).status == 0)
    expectOneLineError(
      try cli.run(["export", "a.bin", "--key-file", backup]), containing: "wrong key")
    #expect(try status(cli)["formatVersion"] as? Int == 1)
    #expect(try cli.run(["verify"]).status == 0)
  }

  @Test("--new-key-file creates or reads the new key and leaves --key-file alone; --retire-old")
  func newKeyFileAndRetireOld() throws {
    let (cli, sources) = try populated()
    defer { cli.cleanup() }
    let oldText = try String(contentsOfFile: cli.path("v.key"), encoding: .utf8)
    let result = try cli.run(["key", "rotate", "--new-key-file", "next.key", "--retire-old"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(try String(contentsOfFile: cli.path("v.key"), encoding: .utf8) == oldText)
    expectOneLineError(try cli.run(["export", "a.bin"]), containing: "wrong key")
    for (name, data) in sources {
      #expect(try cli.run(["export", name, "--key-file", "next.key"]).stdoutData == data)
    }
    let keys = try #require(try status(cli, key: "next.key")["keys"] as? [[String: Any]])
    #expect(keys.count == 1)
  }

  @Test("bad input: wrong key, wrong passphrase, missing or unreadable new key, lock held")
  func badInput() throws {
    let (cli, sources) = try populated(passphrase: "right")
    defer { cli.cleanup() }
    let before = try status(cli)
    // A key from another vault.
    var other = cli
    other.environment["VAULT_DIR"] = cli.path("w")
    other.environment["VAULT_KEY_FILE"] = cli.path("w.key")
    #expect(try other.run(["init"]).status == 0)
    expectOneLineError(
      try cli.run(["key", "rotate", "--key-file", "w.key"]), containing: "wrong key")
    var wrong = cli
    wrong.environment["VAULT_PASSPHRASE"] = "wrong"
    expectOneLineError(try wrong.run(["key", "rotate"]), containing: "wrong passphrase")
    expectOneLineError(
      try cli.run(["key", "rotate", "--new-key-file", "missing/dir/new.key"]),
      containing: "new.key")
    try FileManager.default.createDirectory(
      atPath: cli.path("adir.key"), withIntermediateDirectories: true)
    expectOneLineError(
      try cli.run(["key", "rotate", "--new-key-file", "adir.key"]), containing: "adir.key")
    expectOneLineError(
      try cli.run(["key", "rotate", "--new-key-file", "v.key"]), containing: "current key")
    // Another key operation holds the lock.
    let fd = open(cli.path("v/KEYS.lock"), O_RDWR | O_CREAT, 0o600)
    #expect(flock(fd, LOCK_EX) == 0)
    expectOneLineError(try cli.run(["key", "rotate"]), containing: "another key operation")
    expectOneLineError(
      try cli.run(["key", "rotate", "--reencrypt"]), containing: "another key operation")
    close(fd)
    expectOneLineError(try cli.run(["key", "retire", "0123456789abcdef"]), containing: "not known")
    expectOneLineError(
      try cli.run(["key", "rotate", "--reencrypt", "--retire-old"]), containing: "--reencrypt")
    try expectUnchanged(cli, before, sources)
    #expect(!FileManager.default.fileExists(atPath: cli.path("v.key.new")))
  }

  @Test("a passphrase-protected key rotates to a protected key; passwd changes only the file")
  func passphrases() throws {
    let (cli, sources) = try populated(passphrase: "one")
    defer { cli.cleanup() }
    #expect(try cli.run(["key", "rotate"]).status == 0)
    let rotatedText = try String(contentsOfFile: cli.path("v.key"), encoding: .utf8)
    #expect(rotatedText.contains("vault-key 1 scrypt"))
    var change = cli
    change.environment["VAULT_NEW_PASSPHRASE"] = "two"
    let before = try status(cli)
    change.environment["VAULT_PASSPHRASE"] = "bad"
    expectOneLineError(try change.run(["key", "passwd"]), containing: "wrong passphrase")
    change.environment["VAULT_PASSPHRASE"] = "one"
    let changed = try change.run(["key", "passwd", "--key", "v.key"])
    #expect(changed.status == 0, "\(changed.stderr)")
    #expect(changed.stdout.contains("N=2^17"))
    expectOneLineError(try cli.run(["export", "a.bin"]), containing: "wrong passphrase")
    var now = cli
    now.environment["VAULT_PASSPHRASE"] = "two"
    try expectUnchanged(now, before, sources)
  }

  @Test("--reencrypt with names moves those assets to a new generation")
  func reencryptNamed() throws {
    let (cli, sources) = try populated()
    defer { cli.cleanup() }
    let result = try cli.run(["key", "rotate", "--reencrypt", "a.bin"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("re-encrypted 1 assets"))
    let info = try cli.run(["info", "a.bin", "--json"])
    let object = try #require(
      try JSONSerialization.jsonObject(with: info.stdoutData) as? [String: Any])
    #expect(object["generation"] as? Int == 2)
    for (name, data) in sources { #expect(try cli.run(["export", name]).stdoutData == data) }
    #expect(try cli.run(["verify"]).status == 0)
  }
}
