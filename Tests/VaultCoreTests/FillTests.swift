import Foundation
import Testing

@testable import VaultCore

/// Progressive filling, as the range loader will use it.
@Suite("Progressive fill of partial assets")
struct FillTests {
  let chunk = 16_384

  func fill(_ t: TestVault, validator: String? = "v1", length: Int) throws -> AssetWriter {
    try t.vault.beginFill(
      identity: .url(canonical: "https://example.com/movie.mp4"), length: UInt64(length),
      validator: validator,
      metadata: AssetMetadata(
        name: "movie.mp4", contentType: "video/mp4", originURL: "https://example.com/movie.mp4"))
  }

  func store(_ writer: AssetWriter, _ source: [UInt8], chunks: Range<Int>) throws -> Int {
    let start = chunks.lowerBound * chunk
    let end = min(chunks.upperBound * chunk, source.count)
    return try source[start..<end].withUnsafeBytes {
      try writer.store(firstIndex: chunks.lowerBound, plaintext: $0)
    }
  }

  @Test("chunks stored out of order read back; holes are missing, never zeros")
  func outOfOrder() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let source = patternBytes(count: 10 * chunk + 500, seed: 21)
    let writer = try fill(t, length: source.count)
    #expect(try store(writer, source, chunks: 7..<11) == 4)
    #expect(try store(writer, source, chunks: 0..<2) == 2)
    let info = try t.vault.info(writer.assetID)
    #expect(info.chunksStored == 6 && info.chunksTotal == 11 && !info.complete)
    #expect(info.originURL == "https://example.com/movie.mp4")
    let reader = try t.vault.reader(for: writer.assetID)
    #expect(
      try reader.read(offset: 100, count: 2 * chunk - 100) == Array(source[100..<(2 * chunk)]))
    #expect(
      try reader.read(offset: UInt64(7 * chunk), count: source.count - 7 * chunk)
        == Array(source[(7 * chunk)...]))
    #expect(throws: VaultError.chunkMissing(asset: writer.assetID.short, index: 2)) {
      _ = try reader.read(offset: UInt64(2 * chunk), count: 10)
    }
    #expect(try t.vault.verify()[0].ok)
    // Fill the hole: the asset becomes complete and exports byte-exact.
    #expect(try store(writer, source, chunks: 2..<7) == 5)
    #expect(try t.vault.info(writer.assetID).complete)
    let out = t.directory.file("movie")
    try t.vault.export(writer.assetID, to: out)
    #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out))) == source)
  }

  @Test("a stored chunk is never sealed again within a generation")
  func noReseal() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let source = patternBytes(count: 3 * chunk, seed: 22)
    let writer = try fill(t, length: source.count)
    #expect(try store(writer, source, chunks: 0..<2) == 2)
    let path = t.vault.assetPath(writer.assetID, generation: writer.generation)
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    #expect(try store(writer, source, chunks: 0..<3) == 1)
    let after = try Data(contentsOf: URL(fileURLWithPath: path))
    #expect(after.prefix(before.count) == before)
    // Writers reserve seals in blocks: the count is never below the seals done.
    #expect(try t.vault.index.asset(writer.assetID)?.sealCount ?? 0 >= 3)
  }

  @Test("misaligned runs are refused")
  func misaligned() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let writer = try fill(t, length: 3 * chunk)
    let bytes = [UInt8](repeating: 1, count: chunk - 1)
    #expect(throws: VaultError.self) {
      try bytes.withUnsafeBytes { try writer.store(firstIndex: 0, plaintext: $0) }
    }
    #expect(throws: VaultError.self) {
      try bytes.withUnsafeBytes { try writer.store(firstIndex: 5, plaintext: $0) }
    }
    #expect(try t.vault.info(writer.assetID).chunksStored == 0)
  }

  @Test("the same origin version continues; a changed validator or length starts a new generation")
  func generations() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let v1 = patternBytes(count: 4 * chunk, seed: 23)
    var writer: AssetWriter? = try fill(t, length: v1.count)
    #expect(try store(writer!, v1, chunks: 0..<2) == 2)
    let firstPath = t.vault.assetPath(writer!.assetID, generation: 1)
    writer = nil  // releases the writer lock
    writer = try fill(t, length: v1.count)
    #expect(writer!.generation == 1)
    #expect(try t.vault.info(writer!.assetID).chunksStored == 2)
    writer = nil
    // The origin changed (new ETag): a new generation with new keys, the old chunks gone.
    let v2 = patternBytes(count: 4 * chunk, seed: 24)
    writer = try fill(t, validator: "v2", length: v2.count)
    #expect(writer!.generation == 2)
    #expect(try t.vault.info(writer!.assetID).chunksStored == 0)
    #expect(!FileManager.default.fileExists(atPath: firstPath))
    #expect(try store(writer!, v2, chunks: 0..<4) == 4)
    let reader = try t.vault.reader(for: writer!.assetID)
    #expect(try reader.read(offset: 0, count: v2.count) == v2)
    writer = nil
    // A changed length also starts over.
    writer = try fill(t, validator: "v2", length: 5 * chunk)
    #expect(writer!.generation == 3)
  }

  @Test("filled chunks, the origin URL and its host are sealed at rest")
  func atRest() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    var source = patternBytes(count: 3 * chunk, seed: 25)
    let marker = Array("FILL-PATH-CANARY".utf8)
    source.replaceSubrange(100..<(100 + marker.count), with: marker)
    let writer = try fill(t, length: source.count)
    _ = try store(writer, source, chunks: 0..<3)
    for name in try FileManager.default.subpathsOfDirectory(atPath: t.vault.directory) {
      let path = t.vault.directory + "/" + name
      guard let data = FileManager.default.contents(atPath: path) else { continue }
      for needle in [
        marker, Array("example.com".utf8), Array("movie".utf8), Array("video/mp4".utf8),
      ] {
        #expect(
          data.range(of: Data(needle)) == nil,
          "\(name) leaks \(String(decoding: needle, as: UTF8.self))")
      }
    }
  }

  @Test("a second writer of one asset is refused while the first holds it")
  func writerLock() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let first = try fill(t, length: 2 * chunk)
    #expect(throws: VaultError.assetBusy(first.assetID.short)) {
      _ = try fill(t, length: 2 * chunk)
    }
    _ = first
  }

  @Test("a new generation is recorded only over the generation its filler saw")
  func replaceIsCompareAndSwap() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let source = patternBytes(count: 2 * chunk, seed: 23)
    var writer: AssetWriter? = try fill(t, length: source.count)
    let id = try #require(writer?.assetID)
    #expect(try store(try #require(writer), source, chunks: 0..<2) == 2)
    writer = nil
    // A second process that looked while there was no record must not replace the one
    // recorded since (the multi-process fill race): it is told to look again.
    var newer = try #require(try t.vault.index.asset(id))
    newer.generation = 2
    #expect(throws: VaultError.assetBusy(id.short)) {
      _ = try t.vault.index.replaceGeneration(newer, expected: nil)
    }
    #expect(try t.vault.info(id).generation == 1 && t.vault.info(id).complete)
    let reader = try t.vault.reader(for: id)
    #expect(try reader.read(offset: 0, count: source.count) == source)
    // Over the generation it saw, the replacement goes through (the row only: this
    // test's copy still carries generation 1's key, bound to generation 1).
    #expect(try t.vault.index.replaceGeneration(newer, expected: 1)?.generation == 1)
    #expect(try t.vault.index.asset(id)?.generation == 2)
  }

  @Test("a chunk dropped while its writer is open (self-repair) is stored again by that writer")
  func writerSeesDroppedChunk() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let source = patternBytes(count: 4 * chunk, seed: 24)
    let writer = try fill(t, length: source.count)
    #expect(try store(writer, source, chunks: 0..<4) == 4)
    // The writer's own view says chunk 2 is stored; the index no longer does.
    #expect(
      try t.vault.dropDamagedChunks(writer.assetID, generation: writer.generation, indices: [2])
        == 1)
    #expect(!(try t.vault.info(writer.assetID).complete))
    #expect(try store(writer, source, chunks: 2..<3) == 1)
    // Chunks still stored are skipped, not sealed again.
    #expect(try store(writer, source, chunks: 0..<4) == 0)
    #expect(try t.vault.info(writer.assetID).complete)
    let reader = try t.vault.reader(for: writer.assetID)
    #expect(try reader.read(offset: 0, count: source.count) == source)
  }
}
