import Foundation
import Testing
import VaultCrypto

@testable import VaultCore

/// Every way of changing a vault on disk without the key must be refused with a clear
/// error, never served, and must leave the other assets whole.
@Suite("Tampering is refused")
struct TamperTests {
  let chunk = 16_384
  var slot: Int { chunk + 28 }

  /// A vault with a victim asset "v" (5 full chunks + a short final one) and a bystander "b".
  func setUp() throws -> (TestVault, victim: [UInt8], bystander: [UInt8]) {
    let t = try TestVault(chunkSize: chunk)
    let victim = patternBytes(count: 5 * chunk + 1000, seed: 11)
    let bystander = patternBytes(count: 3 * chunk, seed: 12)
    try t.importBytes(victim, name: "v")
    try t.importBytes(bystander, name: "b")
    return (t, victim, bystander)
  }

  /// Reads every byte of "v"; returns the error it fails with (nil if it read fine).
  func readFailure(_ t: TestVault) -> VaultError? {
    do {
      let reader = try t.vault.reader(for: try t.vault.resolve("v"))
      _ = try reader.read(offset: 0, count: Int(reader.length))
      return nil
    } catch let error as VaultError {
      return error
    } catch {
      Issue.record("unexpected error type \(error)")
      return nil
    }
  }

  func expectRefused(
    _ t: TestVault, bystander: [UInt8], damagedChunk: Int? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let error = readFailure(t)
    #expect(error != nil, "tampered asset was read", sourceLocation: sourceLocation)
    if let damagedChunk {
      guard case .chunkDamaged(_, let index, _) = error else {
        Issue.record(
          "expected chunkDamaged, got \(String(describing: error))", sourceLocation: sourceLocation)
        return
      }
      #expect(index == damagedChunk, sourceLocation: sourceLocation)
    }
    // Export of the tampered asset fails and leaves no output file behind.
    let out = t.directory.file("tampered-out")
    #expect(throws: VaultError.self, sourceLocation: sourceLocation) {
      try t.vault.export(try t.vault.resolve("v"), to: out)
    }
    #expect(!FileManager.default.fileExists(atPath: out), sourceLocation: sourceLocation)
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: t.directory.path)
      .filter { $0.contains("partial") }
    #expect(leftovers.isEmpty, "partial export left behind", sourceLocation: sourceLocation)
    // Verify names the problem and exits non-clean; the bystander is untouched.
    let results = try t.vault.verify()
    #expect(results.contains { !$0.ok }, sourceLocation: sourceLocation)
    #expect(try t.exportBytes("b") == bystander, sourceLocation: sourceLocation)
  }

  @Test("a flipped header bit") func header() throws {
    let (t, _, b) = try setUp()
    defer { t.cleanup() }
    try mutateFile(try t.assetFile("v")) { $0[60] ^= 0x01 }
    guard case .assetDamaged = readFailure(t) else {
      Issue.record("expected assetDamaged")
      return
    }
    try expectRefused(t, bystander: b)
  }

  @Test("a flipped bit in the nonce, ciphertext or tag", arguments: [3, 12 + 500, 12 + 16_384 + 5])
  func slotBit(offsetInSlot: Int) throws {
    let (t, _, b) = try setUp()
    defer { t.cleanup() }
    try mutateFile(try t.assetFile("v")) { $0[128 + 2 * slot + offsetInSlot] ^= 0x80 }
    try expectRefused(t, bystander: b, damagedChunk: 2)
    let results = try t.vault.verify(try t.vault.resolve("v"))
    #expect(results[0].damagedChunks == [2])
  }

  @Test("two slots swapped") func swapped() throws {
    let (t, _, b) = try setUp()
    defer { t.cleanup() }
    try mutateFile(try t.assetFile("v")) { bytes in
      let a = Array(bytes[(128 + slot)..<(128 + 2 * slot)])
      let c = Array(bytes[(128 + 2 * slot)..<(128 + 3 * slot)])
      bytes.replaceSubrange((128 + slot)..<(128 + 2 * slot), with: c)
      bytes.replaceSubrange((128 + 2 * slot)..<(128 + 3 * slot), with: a)
    }
    try expectRefused(t, bystander: b, damagedChunk: 1)
    #expect(try t.vault.verify(try t.vault.resolve("v"))[0].damagedChunks == [1, 2])
  }

  @Test("a slot moved in from another asset") func moved() throws {
    let (t, _, b) = try setUp()
    defer { t.cleanup() }
    let other = Array(try Data(contentsOf: URL(fileURLWithPath: try t.assetFile("b"))))
    try mutateFile(try t.assetFile("v")) { bytes in
      bytes.replaceSubrange(
        (128 + slot)..<(128 + 2 * slot), with: other[(128 + slot)..<(128 + 2 * slot)])
    }
    try expectRefused(t, bystander: b, damagedChunk: 1)
  }

  @Test("the file truncated") func truncated() throws {
    let (t, _, b) = try setUp()
    defer { t.cleanup() }
    try mutateFile(try t.assetFile("v")) { $0.removeLast(700) }
    try expectRefused(t, bystander: b, damagedChunk: 5)
  }

  @Test("the final chunk replaced by a shorter one, index edited to match") func shorterFinal()
    throws
  {
    let (t, _, b) = try setUp()
    defer { t.cleanup() }
    // Drop 10 ciphertext bytes of the final slot (keeping nonce and tag) and claim a shorter length.
    try mutateFile(try t.assetFile("v")) { bytes in
      let tag = Array(bytes[(bytes.count - 16)...])
      bytes.removeSubrange((bytes.count - 26)...)
      bytes += tag
    }
    let id = try t.vault.resolve("v")
    try tamperIndex(
      t.vault.directory, "UPDATE asset SET length = length - 10 WHERE id = ?", [Data(id.bytes)])
    try expectRefused(t, bystander: b)
  }

  @Test("a zero-filled slot") func zeroed() throws {
    let (t, _, b) = try setUp()
    defer { t.cleanup() }
    try mutateFile(try t.assetFile("v")) { bytes in
      bytes.replaceSubrange(
        (128 + 3 * slot)..<(128 + 4 * slot), with: [UInt8](repeating: 0, count: slot))
    }
    try expectRefused(t, bystander: b, damagedChunk: 3)
  }

  @Test("a chunk put back from an older generation") func olderGeneration() throws {
    let (t, victim, b) = try setUp()
    defer { t.cleanup() }
    let old = Array(try Data(contentsOf: URL(fileURLWithPath: try t.assetFile("v"))))
    try t.vault.remove(try t.vault.resolve("v"))
    try t.importBytes(victim, name: "v")
    try mutateFile(try t.assetFile("v")) { bytes in
      bytes.replaceSubrange(
        (128 + 4 * slot)..<(128 + 5 * slot), with: old[(128 + 4 * slot)..<(128 + 5 * slot)])
    }
    try expectRefused(t, bystander: b, damagedChunk: 4)
  }

  @Test(
    "index records edited", arguments: ["wrappedKey", "meta", "length", "generation", "chunkSize"])
  func indexRecord(column: String) throws {
    let (t, _, b) = try setUp()
    defer { t.cleanup() }
    let id = try t.vault.resolve("v")
    switch column {
    case "wrappedKey", "meta":
      // Flip one bit in the middle of the blob.
      let record = try #require(try t.vault.index.asset(id))
      var blob = Array(column == "meta" ? record.meta : record.wrappedKey)
      blob[20] ^= 0x01
      try tamperIndex(
        t.vault.directory, "UPDATE asset SET \(column) = ? WHERE id = ?",
        [Data(blob), Data(id.bytes)])
    case "length":
      try tamperIndex(
        t.vault.directory, "UPDATE asset SET length = length + 1 WHERE id = ?", [Data(id.bytes)])
    case "generation":
      try tamperIndex(
        t.vault.directory, "UPDATE asset SET generation = 2 WHERE id = ?", [Data(id.bytes)])
    default:
      try tamperIndex(
        t.vault.directory, "UPDATE asset SET chunkSize = 32768 WHERE id = ?", [Data(id.bytes)])
    }
    let reopened = try Vault.open(at: t.vault.directory, masterKey: try demoKey())
    #expect(throws: VaultError.self) {
      let reader = try reopened.reader(for: id)
      _ = try reader.read(offset: 0, count: Int(reader.length))
    }
    #expect(try reopened.verify().contains { !$0.ok })
    let out = t.directory.file("b-out")
    try reopened.export(try reopened.resolve("b"), to: out)
    #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out))) == b)
  }

  @Test("a wrong key opens nothing and says so") func wrongKey() throws {
    let (t, _, _) = try setUp()
    defer { t.cleanup() }
    let other = try MasterKey.generate()
    do {
      _ = try Vault.open(at: t.vault.directory, masterKey: other)
      Issue.record("a wrong key opened the vault")
    } catch let error as VaultError {
      guard case .wrongKey(let expected, let actual) = error else {
        Issue.record("expected wrongKey, got \(error)")
        return
      }
      #expect(expected == [try demoKey().keyID])
      #expect(actual == other.keyID)
    }
    // Same key id, different commitment (the key row was edited): refused as damage.
    try tamperIndex(t.vault.directory, "UPDATE masterKey SET commitment = zeroblob(32)")
    #expect(
      throws: VaultError.indexDamaged(
        reason: "the key commitment for key id 13edc813c83d4a24 does not match this key")
    ) {
      try Vault.open(at: t.vault.directory, masterKey: try demoKey())
    }
  }
}

@Suite("Index consistency")
struct IndexConsistencyTests {
  @Test("verify reports a presence map that lost its bits")
  func clearedPresence() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    try t.importBytes(patternBytes(count: 50_000, seed: 9), name: "p")
    let id = try t.vault.resolve("p")
    try tamperIndex(
      t.vault.directory, "UPDATE asset SET presence = zeroblob(1) WHERE id = ?", [Data(id.bytes)])
    let results = try t.vault.verify()
    #expect(results.count == 1)
    #expect(results[0].ok == false)
    #expect(throws: VaultError.chunkMissing(asset: id.short, index: 0)) {
      _ = try t.vault.reader(for: id).read(offset: 0, count: 10)
    }
  }

  @Test("a key file demanding huge scrypt memory is refused before deriving")
  func hostileScrypt() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let path = dir.file("hostile.key")
    let text =
      "vault-key 1 scrypt\nid 0000000000000000\nscrypt 4294967296 64 64\nsalt AAAA\nsealed AAAA\n"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    #expect(throws: VaultError.keyFile(path: path, reason: "scrypt parameters are too large")) {
      try KeyFile.read(at: path, passphrase: { Array("x".utf8) })
    }
  }
}
