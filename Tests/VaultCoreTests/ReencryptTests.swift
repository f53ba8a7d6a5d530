import Foundation
import GRDB
import Testing
import VaultCrypto

@testable import VaultCore

/// Re-encryption under new data keys (Vault+Reencrypt.swift).
@Suite("Re-encryption")
struct ReencryptTests {
  @Test("new generation, new key, new ciphertext, same plaintext; old file gone")
  func reencryptAll() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let a = patternBytes(count: 100_000, seed: 5)
    let b = patternBytes(count: 0, seed: 6)
    try t.importBytes(a, name: "a")
    try t.importBytes(b, name: "b")
    let oldFile = try t.assetFile("a")
    let oldBytes = Array(try Data(contentsOf: URL(fileURLWithPath: oldFile)))
    let oldRecord = try #require(try t.vault.index.asset(try t.vault.resolve("a")))
    let summary = try t.vault.reencrypt()
    #expect(summary.assets == 2 && summary.chunks == 7 && summary.bytes == 100_000)
    let record = try #require(try t.vault.index.asset(try t.vault.resolve("a")))
    #expect(record.generation == 2 && record.sealCount == 7)
    #expect(record.wrappedKey != oldRecord.wrappedKey)
    #expect(!FileManager.default.fileExists(atPath: oldFile))
    let newBytes = Array(try Data(contentsOf: URL(fileURLWithPath: try t.assetFile("a"))))
    #expect(newBytes.count == oldBytes.count)
    // Every slot is different: a new key and fresh nonces.
    let layout = record.layout
    for i in 0..<layout.chunkCount {
      let at = Int(layout.slotOffset(i))
      #expect(newBytes[at..<(at + 28)] != oldBytes[at..<(at + 28)])
    }
    #expect(try t.exportBytes("a") == a)
    #expect(try t.exportBytes("b") == b)
    #expect(try t.vault.verify().allSatisfy(\.ok))
    #expect(try t.vault.keyStatus().reencryptionPending == 0)
  }

  @Test("a rotated-out key cannot open re-encrypted assets; named assets only")
  func afterRotation() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    try t.importBytes(patternBytes(count: 20_000, seed: 7), name: "x")
    try t.importBytes(patternBytes(count: 20_000, seed: 8), name: "y")
    let rotated = try t.vault.rotateMasterKey(to: try MasterKey.generate())
    let x = try rotated.resolve("x")
    let summary = try rotated.reencrypt(assets: [x])
    #expect(summary.assets == 1)
    #expect(try rotated.info(x).generation == 2)
    #expect(try rotated.info(try rotated.resolve("y")).generation == 1)
    let old = try Vault.open(at: t.directory.file("vault"), masterKey: try demoKey())
    #expect(throws: VaultError.self) { _ = try old.reader(for: x) }
    #expect(try old.reader(for: try old.resolve("y")).length == 20_000)
    #expect(try old.keyStatus().keys.last?.assets == 1)
  }

  @Test("a partial asset keeps its presence map; holes stay missing")
  func partialAsset() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let source = patternBytes(count: 6 * t.chunkSize + 10, seed: 9)
    let (id, before) = try fillPartially(t, source)
    // The fill's writer (and its file lock) is gone: re-encryption may take the file.
    let summary = try t.vault.reencrypt(assets: [id])
    #expect(summary.chunks == 4)
    let after = try t.vault.info(id)
    #expect(after.chunksStored == before.chunksStored && after.generation == 2)
    #expect(after.validator == "\"e1\"")
    let reader = try t.vault.reader(for: id)
    #expect(try reader.read(offset: 0, count: 100) == Array(source[0..<100]))
    #expect(throws: VaultError.chunkMissing(asset: id.short, index: 1)) {
      _ = try reader.read(offset: UInt64(t.chunkSize), count: 1)
    }
    #expect(try t.vault.verify().allSatisfy(\.ok))
  }

  private func fillPartially(_ t: TestVault, _ source: [UInt8]) throws -> (AssetID, AssetInfo) {
    let writer = try t.vault.beginFill(
      identity: .url(canonical: "https://example.com/p.mp4"), length: UInt64(source.count),
      validator: "\"e1\"", metadata: AssetMetadata(name: "p.mp4", contentType: "video/mp4"))
    _ = try source[(4 * t.chunkSize)...].withUnsafeBytes {
      try writer.store(firstIndex: 4, plaintext: $0)
    }
    _ = try source[0..<t.chunkSize].withUnsafeBytes {
      try writer.store(firstIndex: 0, plaintext: $0)
    }
    return (writer.assetID, try t.vault.info(writer.assetID))
  }

  @Test("resume: a queued job continues, leftovers of a crash are removed")
  func resume() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let sources = (0..<3).map { patternBytes(count: 30_000 + $0, seed: UInt64(10 + $0)) }
    for (i, bytes) in sources.enumerated() { try t.importBytes(bytes, name: "r\(i)") }
    let ids = try (0..<3).map { try t.vault.resolve("r\($0)") }
    // As if a run queued all three, flipped r0 but died before unlinking its old file, and
    // died half-way through writing r1's new generation.
    let r0Old = try t.assetFile("r0")
    let r0OldCopy = Array(try Data(contentsOf: URL(fileURLWithPath: r0Old)))
    try t.vault.reencrypt(assets: [ids[0]])
    try t.vault.index.enqueueReencryption(Array(ids[1...]))
    try Data(r0OldCopy).write(to: URL(fileURLWithPath: r0Old))
    let r1Half = t.vault.assetPath(ids[1], generation: 2)
    try Data(repeating: 7, count: 5000).write(to: URL(fileURLWithPath: r1Half))
    #expect(try t.vault.keyStatus().reencryptionPending == 2)

    let summary = try t.vault.reencrypt()
    #expect(summary.assets == 2 && summary.orphanFilesRemoved == 2)
    #expect(!FileManager.default.fileExists(atPath: r0Old))
    for (i, bytes) in sources.enumerated() {
      #expect(try t.exportBytes("r\(i)") == bytes)
      #expect(try t.vault.info(ids[i]).generation == 2)
    }
    #expect(try t.vault.keyStatus().reencryptionPending == 0)
  }

  @Test("a damaged chunk stops re-encryption of that asset; it keeps its old generation")
  func damagedChunk() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let bytes = patternBytes(count: 50_000, seed: 12)
    try t.importBytes(bytes, name: "d")
    try mutateFile(try t.assetFile("d")) { $0[200] ^= 1 }
    #expect(throws: VaultError.self) { try t.vault.reencrypt() }
    let id = try t.vault.resolve("d")
    #expect(try t.vault.info(id).generation == 1)
    #expect(FileManager.default.fileExists(atPath: try t.assetFile("d")))
    #expect(!FileManager.default.fileExists(atPath: t.vault.assetPath(id, generation: 2)))
    #expect(try t.vault.keyStatus().reencryptionPending == 1)
  }
}
