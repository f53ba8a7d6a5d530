import Foundation
import Testing

@testable import VaultCore

/// What opening a vault repairs after a crash, and `verify(repair:)`.
@Suite("Crash recovery on open and repair")
struct ReconcileTests {
  let chunk = 16_384

  @Test("an orphan file is removed on open, unless a writer holds it")
  func orphans() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let source = patternBytes(count: 3 * chunk, seed: 1)
    try t.importBytes(source, name: "kept")
    // A crash after the file was written but before its row: a file no row owns.
    let orphanID = AssetID(bytes: Array(repeating: 0xAB, count: 32))
    let orphan = t.vault.assetPath(orphanID, generation: 1)
    try FileManager.default.createDirectory(
      atPath: (orphan as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try Data(repeating: 7, count: 500).write(to: URL(fileURLWithPath: orphan))
    // And a file a live writer (another fill in progress) holds.
    var writer: AssetWriter? = try t.vault.beginFill(
      identity: .contentID("in-progress"), length: UInt64(2 * chunk), validator: nil,
      metadata: AssetMetadata(name: "in-progress"))
    let busyID = try #require(writer?.assetID)
    let busyPath = t.vault.assetPath(busyID, generation: try #require(writer?.generation))
    // Make the busy file look like an orphan: its row is gone (as if not written yet).
    try t.vault.index.deleteAsset(busyID)

    let reopened = try Vault.open(at: t.vault.directory, masterKey: try demoKey())
    #expect(reopened.repairsOnOpen.orphanFilesRemoved == 1)
    #expect(!FileManager.default.fileExists(atPath: orphan))
    #expect(FileManager.default.fileExists(atPath: busyPath))
    #expect(try t.exportBytes("kept") == source)
    #expect(writer != nil)
    writer = nil
    // Once the writer is gone, the next open removes its file too.
    let again = try Vault.open(at: t.vault.directory, masterKey: try demoKey())
    #expect(again.repairsOnOpen.orphanFilesRemoved == 1)
    #expect(!FileManager.default.fileExists(atPath: busyPath))
  }

  @Test("a record whose file is gone is dropped; a truncated file loses the chunks past its end")
  func missingAndTruncated() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let a = patternBytes(count: 4 * chunk, seed: 2)
    try t.importBytes(a, name: "gone")
    try t.importBytes(a, name: "cut")
    try t.importBytes(a, name: "fine")
    try FileManager.default.removeItem(atPath: try t.assetFile("gone"))
    let cut = try t.assetFile("cut")
    // Keep the header and two whole slots.
    let keep = VaultFormat.headerLength + 2 * (chunk + VaultFormat.slotOverhead) + 100
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: cut))
    try handle.truncate(atOffset: UInt64(keep))
    try handle.close()

    let reopened = try Vault.open(at: t.vault.directory, masterKey: try demoKey())
    #expect(reopened.repairsOnOpen.recordsDropped == 1)
    // Open does not stat every file; verify (and reconcile(checkSizes:)) does.
    #expect(reopened.repairsOnOpen.chunksCleared == 0)
    #expect(try reopened.reconcile(checkSizes: true).chunksCleared == 2)
    #expect(try reopened.list().map(\.name).sorted() == ["cut", "fine"])
    let info = try reopened.info(try reopened.resolve("cut"))
    #expect(info.chunksStored == 2 && !info.complete)
    // What is recorded opens: verify passes, the first two chunks read back.
    #expect(try reopened.verify().allSatisfy(\.ok))
    let reader = try reopened.reader(for: try reopened.resolve("cut"))
    #expect(try reader.read(offset: 0, count: 2 * chunk) == Array(a[0..<(2 * chunk)]))
    // A clean vault reports nothing.
    let clean = try Vault.open(at: t.vault.directory, masterKey: try demoKey())
    #expect(clean.repairsOnOpen.isEmpty)
  }

  @Test("verify --repair drops damaged chunks; what is left verifies")
  func repairDrops() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let a = patternBytes(count: 4 * chunk, seed: 3)
    try t.importBytes(a, name: "x")
    let path = try t.assetFile("x")
    let slot = chunk + VaultFormat.slotOverhead
    try mutateFile(path) { $0[VaultFormat.headerLength + 2 * slot + 40] ^= 0x10 }
    let results = try t.vault.verify(repair: true)
    #expect(results.count == 1 && results[0].damagedChunks == [2] && results[0].dropped == 1)
    #expect(!results[0].ok)
    #expect(try t.vault.verify().allSatisfy(\.ok))
    let info = try t.vault.info(try t.vault.resolve("x"))
    #expect(info.chunksStored == 3)
    #expect(try t.vault.stats().repairs == 1)
    #expect(throws: VaultError.chunkMissing(asset: info.id.prefix(12).description, index: 2)) {
      let reader = try t.vault.reader(for: try t.vault.resolve("x"))
      _ = try reader.read(offset: UInt64(2 * chunk), count: 10)
    }
  }
}
