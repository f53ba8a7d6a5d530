import Foundation
import GRDB
import Testing
import VaultCrypto

@testable import VaultCore

/// Crypto-shredding: after `remove` the wrapped data key exists nowhere in the vault
/// directory, so no surviving or restored copy of the chunks opens.
@Suite("Crypto-shredding")
struct ShredTests {
  /// Every byte of every file under `path`.
  func allFiles(_ path: String) throws -> [(String, [UInt8])] {
    let enumerator = FileManager.default.enumerator(atPath: path)
    var out: [(String, [UInt8])] = []
    while let name = enumerator?.nextObject() as? String {
      var isDir: ObjCBool = false
      let full = path + "/" + name
      if FileManager.default.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue {
        out.append((name, Array(try Data(contentsOf: URL(fileURLWithPath: full)))))
      }
    }
    return out
  }

  func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    Data(haystack).range(of: Data(needle)) != nil
  }

  @Test(
    "after rm: the wrapped keys are in no file; a restored chunk file or directory opens nothing")
  func restoredCopiesOpenNothing() throws {
    let t = try TestVault()
    defer { t.directory.cleanup() }
    let bytes = patternBytes(count: 200_000, seed: 5)
    try t.importBytes(bytes, name: "secret")
    let id = try t.vault.resolve("secret")
    // A rotation leaves a copy of the data key under the now decrypt-only key (assetKey).
    let vault = try t.vault.rotateMasterKey(to: try MasterKey.generate())
    let record = try #require(try vault.index.asset(id))
    let copies = try vault.index.readTransaction { db in
      try Data.fetchAll(
        db, sql: "SELECT wrappedKey FROM assetKey WHERE assetID = ?", arguments: [record.id])
    }
    #expect(copies.count == 1)
    let wrapped = [Array(record.wrappedKey)] + copies.map { Array($0) }
    let saved = t.directory.file("saved")
    try FileManager.default.copyItem(atPath: t.directory.file("vault"), toPath: saved)
    let chunkFile = vault.assetPath(id, generation: UInt64(record.generation))
    let savedChunk = try Data(contentsOf: URL(fileURLWithPath: chunkFile))

    try vault.shred(id)

    for (name, content) in try allFiles(t.directory.file("vault")) {
      for key in wrapped { #expect(!contains(content, key), "wrapped key found in \(name)") }
    }
    // The chunk file comes back (a backup, an undelete): it is an orphan with no key.
    try savedChunk.write(to: URL(fileURLWithPath: chunkFile))
    let reopened = try Vault.open(at: t.directory.file("vault"), masterKey: try demoKey())
    #expect(try reopened.list().isEmpty)
    #expect(throws: VaultError.unknownAsset("secret")) { try reopened.resolve("secret") }
    // The whole saved directory minus the key record: every file from before, with the
    // index from after the shred.
    let restored = t.directory.file("restored")
    try FileManager.default.copyItem(atPath: saved, toPath: restored)
    for suffix in ["", "-wal", "-shm"] {
      try? FileManager.default.removeItem(atPath: restored + "/index.sqlite" + suffix)
      if FileManager.default.fileExists(atPath: t.directory.file("vault/index.sqlite" + suffix)) {
        try FileManager.default.copyItem(
          atPath: t.directory.file("vault/index.sqlite" + suffix),
          toPath: restored + "/index.sqlite" + suffix)
      }
    }
    let other = try Vault.open(at: restored, masterKey: try demoKey())
    #expect(try other.list().isEmpty)
    #expect(throws: VaultError.unknownAsset(id.short)) { try other.reader(for: id) }
  }
}
