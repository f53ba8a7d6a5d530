import Foundation
import GRDB
import Testing
import VaultCrypto

@testable import VaultCore

/// Master key rotation, retirement and key status (Vault+Rotation.swift).
@Suite("Master key rotation")
struct RotationTests {
  /// A vault with three assets (multi-chunk, empty, one chunk) and their sources.
  func populated() throws -> (TestVault, [String: [UInt8]]) {
    let t = try TestVault()
    var sources: [String: [UInt8]] = [:]
    for (name, size, seed) in [("a.bin", 70_000, UInt64(1)), ("empty", 0, 2), ("c", 1000, 3)] {
      let bytes = patternBytes(count: size, seed: seed)
      try t.importBytes(bytes, name: name)
      sources[name] = bytes
    }
    return (t, sources)
  }

  func exports(_ vault: Vault, _ sources: [String: [UInt8]], in t: TestVault) throws {
    for (name, bytes) in sources {
      let id = try vault.resolve(name)
      let reader = try vault.reader(for: id)
      #expect(try reader.read(offset: 0, count: bytes.count) == bytes, "\(name)")
    }
    #expect(try vault.verify().allSatisfy(\.ok))
  }

  func scalar(_ t: TestVault, _ sql: String) throws -> Int {
    try t.vault.index.readTransaction { try Int.fetchOne($0, sql: sql) ?? -1 }
  }

  @Test("rotation rewraps every key; old key decrypt-only until retired, then opens nothing")
  func rotateAndRetire() throws {
    let (t, sources) = try populated()
    defer { t.cleanup() }
    let path = t.directory.file("vault")
    let oldKey = try demoKey()
    let idsBefore = try t.vault.list().map(\.id).sorted()
    let newKey = try MasterKey.generate()
    let rotated = try t.vault.rotateMasterKey(to: newKey)
    #expect(rotated.keyID == newKey.keyID)
    #expect(try rotated.list().map(\.id).sorted() == idsBefore)
    #expect(try rotated.list().allSatisfy { $0.keyID == newKey.keyID })
    try exports(rotated, sources, in: t)

    let status = try rotated.keyStatus()
    #expect(status.activeKeyID == newKey.keyID)
    #expect(status.formatVersion == VaultFormat.indexVersionKeysPending)
    #expect(status.keys.map(\.state) == ["active", "decryptOnly"])
    #expect(status.keys.map(\.assets) == [3, 3])

    // The old key still opens and reads, but may not store anything.
    let old = try Vault.open(at: path, masterKey: oldKey)
    try exports(old, sources, in: t)
    #expect(throws: VaultError.keyDecryptOnly(keyID: oldKey.keyID, activeKeyID: newKey.keyID)) {
      try TestVault.importInto(old, t, bytes: [1, 2, 3], name: "late")
    }
    // A new asset is wrapped under the new key only.
    try TestVault.importInto(rotated, t, bytes: [4, 5, 6], name: "new")
    #expect(throws: VaultError.self) { try old.info(try old.resolve("new")) }

    try rotated.retireKey(oldKey.keyID)
    #expect(throws: VaultError.wrongKey(expectedKeyIDs: [newKey.keyID], actualKeyID: oldKey.keyID))
    {
      _ = try Vault.open(at: path, masterKey: oldKey)
    }
    #expect(try scalar(t, "SELECT COUNT(*) FROM assetKey") == 0)
    #expect(try rotated.keyStatus().formatVersion == 1)
    try exports(rotated, sources, in: t)
  }

  @Test("--retire-old in the same transaction; a rerun with the active key is a no-op")
  func retireOldAndRerun() throws {
    let (t, sources) = try populated()
    defer { t.cleanup() }
    let newKey = try MasterKey.generate()
    let rotated = try t.vault.rotateMasterKey(to: newKey, retireOld: true)
    #expect(try rotated.keyStatus().keys.map(\.keyID) == [newKey.keyID])
    #expect(try rotated.keyStatus().formatVersion == 1)
    #expect(throws: VaultError.self) {
      _ = try Vault.open(at: t.directory.file("vault"), masterKey: try demoKey())
    }
    let again = try rotated.rotateMasterKey(to: newKey)
    #expect(again.keyID == newKey.keyID)
    try exports(again, sources, in: t)
  }

  @Test("refusals change nothing: decrypt-only key, known key, active key retire, damaged key")
  func refusals() throws {
    let (t, _) = try populated()
    defer { t.cleanup() }
    let first = try MasterKey.generate()
    let rotated = try t.vault.rotateMasterKey(to: first)
    // The instance opened with the old key is decrypt-only now.
    #expect(throws: VaultError.keyDecryptOnly(keyID: t.vault.keyID, activeKeyID: first.keyID)) {
      _ = try t.vault.rotateMasterKey(to: try MasterKey.generate())
    }
    #expect(throws: VaultError.self) { _ = try rotated.rotateMasterKey(to: try demoKey()) }
    #expect(throws: VaultError.self) { try rotated.retireKey(first.keyID) }
    #expect(throws: VaultError.self) { try rotated.retireKey("0123456789abcdef") }

    // One damaged wrapped key aborts the whole rotation: every row stays as it was.
    try tamperIndex(
      t.directory.file("vault"), "UPDATE asset SET wrappedKey = zeroblob(60) WHERE rowid = 1")
    let before = try rotated.keyStatus()
    #expect(throws: VaultError.self) {
      _ = try rotated.rotateMasterKey(to: try MasterKey.generate())
    }
    #expect(try rotated.keyStatus() == before)
  }

  @Test("a second key operation is refused while one holds the lock")
  func lockRefusesSecond() throws {
    let (t, _) = try populated()
    defer { t.cleanup() }
    // Another process's hold, as flock sees it: a separate open file description.
    let lockPath = t.directory.file("vault") + "/KEYS.lock"
    let fd = open(lockPath, O_RDWR | O_CREAT, 0o600)
    #expect(flock(fd, LOCK_EX) == 0)
    #expect(throws: VaultError.keyOperationBusy(path: lockPath)) {
      _ = try t.vault.rotateMasterKey(to: try MasterKey.generate())
    }
    #expect(throws: VaultError.keyOperationBusy(path: lockPath)) { try t.vault.reencrypt() }
    close(fd)
    #expect(try t.vault.keyStatus().keys.count == 1)
    // Re-entrant within a process: a caller may hold it around several operations.
    try t.vault.withKeyOperationLock {
      _ = try t.vault.rotateMasterKey(to: try MasterKey.generate())
    }
  }

  @Test("rm after rotation shreds the decrypt-only copy of the data key too")
  func removeShredsCopies() throws {
    let (t, _) = try populated()
    defer { t.cleanup() }
    let rotated = try t.vault.rotateMasterKey(to: try MasterKey.generate())
    try rotated.remove(try rotated.resolve("a.bin"))
    #expect(try scalar(t, "SELECT COUNT(*) FROM assetKey") == 2)
  }

  @Test("a newer index version is refused; the v1 fixture migrates and rotates")
  func versions() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let copy = dir.file("vault")
    try FileManager.default.copyItem(atPath: fixturesDirectory + "/vault-v1", toPath: copy)
    let vault = try Vault.open(at: copy, masterKey: try demoKey())
    let rotated = try vault.rotateMasterKey(to: try MasterKey.generate())
    let bytes = patternBytes(count: 40_000, seed: 1)
    #expect(
      try rotated.reader(for: try rotated.resolve("fixture-a.bin")).read(offset: 0, count: 40_000)
        == bytes)
    try rotated.reencrypt()
    #expect(try rotated.verify().allSatisfy(\.ok))
    try tamperIndex(copy, "UPDATE settings SET formatVersion = 3")
    #expect(throws: VaultError.unsupportedFormat(version: 3)) {
      _ = try Vault.open(at: copy, masterKey: try demoKey())
    }
  }
}

extension TestVault {
  /// Imports `bytes` into `vault` (which may be another instance of this test's vault).
  static func importInto(_ vault: Vault, _ t: TestVault, bytes: [UInt8], name: String) throws {
    let source = t.directory.file("src-\(UUID().uuidString)")
    try Data(bytes).write(to: URL(fileURLWithPath: source))
    defer { try? FileManager.default.removeItem(atPath: source) }
    try vault.importFile(at: source, name: name)
  }
}
