import Foundation
import Testing
import VaultCrypto

@testable import VaultCore

@Suite("Round trips and random access")
struct RoundTripTests {
  @Test(
    "import then export gives the same bytes",
    arguments: [0, 1, 16_383, 16_384, 16_385, 5 * 16_384 + 123, 300 * 16_384 + 7])
  func roundTrip(size: Int) throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let source = patternBytes(count: size, seed: UInt64(size))
    let info = try t.importBytes(source, name: "asset-\(size)")
    #expect(info.size == UInt64(size))
    #expect(info.chunksTotal == (size + 16_383) / 16_384)
    #expect(info.chunksStored == info.chunksTotal)
    #expect(try t.exportBytes("asset-\(size)") == source)
    let results = try t.vault.verify()
    #expect(results.count == 1 && results[0].ok)
    #expect(results[0].chunksChecked == info.chunksTotal)
  }

  @Test("a pipe of unknown length imports and reads back", arguments: [0, 5, 16_384, 70_001])
  func pipeImport(size: Int) throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let source = patternBytes(count: size, seed: 99)
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    let writeEnd = fds[1]
    let writer = Thread {
      source.withUnsafeBytes { raw in
        var done = 0
        while done < raw.count {
          let n = write(writeEnd, raw.baseAddress! + done, min(4096, raw.count - done))
          if n <= 0 { break }
          done += n
        }
      }
      close(writeEnd)
    }
    writer.start()
    let info = try t.vault.importStream(fileDescriptor: fds[0], sourceName: "pipe", name: "piped")
    close(fds[0])
    #expect(info.size == UInt64(size))
    #expect(try t.exportBytes("piped") == source)
    // The header says "length unknown"; the reader still refuses ranges past the end.
    let reader = try t.vault.reader(for: try t.vault.resolve("piped"))
    #expect(throws: VaultError.self) { try reader.read(offset: UInt64(size), count: 1) }
  }

  @Test("random ranges match the source and open only the chunks they touch")
  func randomRanges() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let size = 40 * 16_384 + 999
    let source = patternBytes(count: size, seed: 7)
    try t.importBytes(source, name: "r")
    let id = try t.vault.resolve("r")
    var rng = SystemRandomNumberGenerator()
    for _ in 0..<300 {
      let offset = Int.random(in: 0..<size, using: &rng)
      let count = Int.random(in: 0...min(size - offset, 3 * 16_384), using: &rng)
      let reader = try t.vault.reader(for: id)
      let bytes = try reader.read(offset: UInt64(offset), count: count)
      #expect(bytes[...] == source[offset..<(offset + count)])
      let touched = count == 0 ? 0 : (offset + count - 1) / 16_384 - offset / 16_384 + 1
      #expect(reader.chunksOpened == touched, "offset \(offset) count \(count)")
    }
  }

  @Test("exporting a range writes exactly that range")
  func exportRange() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let source = patternBytes(count: 100_000, seed: 3)
    try t.importBytes(source, name: "x")
    let id = try t.vault.resolve("x")
    let out = t.directory.file("range")
    try t.vault.export(id, to: out, range: 16_000...50_000)
    #expect(
      Array(try Data(contentsOf: URL(fileURLWithPath: out))) == Array(source[16_000...50_000]))
    #expect(
      throws: VaultError.rangeNotSatisfiable(offset: 99_000, length: 1_001, assetLength: 100_000)
    ) {
      try t.vault.export(id, to: out, range: 99_000...100_000)
    }
  }

  @Test("sealing the same bytes twice gives different ciphertexts (fresh nonces)")
  func freshNonces() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let source = patternBytes(count: 3 * 16_384, seed: 5)
    try t.importBytes(source, name: "a")
    let first = try Data(contentsOf: URL(fileURLWithPath: try t.assetFile("a")))
    try t.vault.remove(try t.vault.resolve("a"))
    try t.importBytes(source, name: "a")
    let second = try Data(contentsOf: URL(fileURLWithPath: try t.assetFile("a")))
    #expect(first.count == second.count)
    // Same id, same generation number, new data key and new nonces: no slot repeats.
    let slot = 16_384 + 28
    for i in 0..<3 {
      let range = (128 + i * slot)..<(128 + i * slot + 12)
      #expect(first[range] != second[range], "nonce of chunk \(i) repeated")
    }
    #expect(try t.exportBytes("a") == source)
  }

  @Test("names, full ids and id prefixes resolve; unknown and duplicate names are refused")
  func naming() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let info = try t.importBytes([1, 2, 3], name: "song.mp3", type: "audio/mpeg")
    #expect(try t.vault.resolve("song.mp3").hex == info.id)
    #expect(try t.vault.resolve(info.id).hex == info.id)
    #expect(try t.vault.resolve(String(info.id.prefix(8))).hex == info.id)
    #expect(throws: VaultError.unknownAsset("nope")) { try t.vault.resolve("nope") }
    #expect(throws: VaultError.duplicateAsset("song.mp3")) {
      try t.importBytes([4], name: "song.mp3")
    }
    let listed = try t.vault.list()
    #expect(listed.count == 1)
    #expect(listed[0].contentType == "audio/mpeg")
    #expect(listed[0].name == "song.mp3")
    // The id is a keyed HMAC: not the name, not a plain hash of it.
    #expect(!info.id.contains(Bytes.hex(Array("song".utf8))))
    #expect(
      info.id
        != (try SHA256.hash(Array("id:song.mp3".utf8))).map { String(format: "%02x", $0) }.joined())
  }

  @Test("remove destroys the key row first; the asset is gone and others remain")
  func remove() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let keep = patternBytes(count: 20_000, seed: 1)
    try t.importBytes(keep, name: "keep")
    try t.importBytes(patternBytes(count: 20_000, seed: 2), name: "drop")
    let file = try t.assetFile("drop")
    try t.vault.remove(try t.vault.resolve("drop"))
    #expect(!FileManager.default.fileExists(atPath: file))
    #expect(throws: VaultError.unknownAsset("drop")) { try t.vault.resolve("drop") }
    #expect(try t.exportBytes("keep") == keep)
  }
}
