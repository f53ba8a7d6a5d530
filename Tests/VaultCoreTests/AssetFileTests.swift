import Foundation
import Testing

@testable import VaultCore

@Suite("Asset file writer locks")
struct AssetFileTests {
  @Test("an unlocked file the index owns is a duplicate and is not deleted")
  func recordedFileIsKept() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let path = dir.file("asset.1")
    try Data("committed".utf8).write(to: URL(fileURLWithPath: path))
    #expect(throws: VaultError.duplicateAsset("a")) {
      _ = try AssetFile.createForWriting(path, asset: "a") { true }
    }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "committed")
  }

  @Test("an unlocked file the index does not own is a crash leftover and is replaced")
  func orphanIsReplaced() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let path = dir.file("asset.1")
    try Data("orphan".utf8).write(to: URL(fileURLWithPath: path))
    let file = try AssetFile.createForWriting(path, asset: "a") { false }
    #expect(try file.size() == 0)
  }

  @Test("a file another writer holds is busy")
  func lockedIsBusy() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let path = dir.file("asset.1")
    let first = try AssetFile.createForWriting(path, asset: "a") { false }
    #expect(AssetFile.isLockedByWriter(path))
    #expect(throws: VaultError.assetBusy("a")) {
      _ = try AssetFile.createForWriting(path, asset: "a") { false }
    }
    _ = first
  }
}
