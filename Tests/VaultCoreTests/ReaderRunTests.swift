import Foundation
import Testing

@testable import VaultCore

/// Reads spanning several chunks: runs of whole chunks are opened in one batch, partial
/// chunks at either end through the one-chunk cache; the bytes and the errors are the same.
@Suite("Multi-chunk reads")
struct ReaderRunTests {
  let chunk = 16_384
  var slot: Int { chunk + VaultFormat.slotOverhead }

  @Test("reads of every alignment and length across runs of whole chunks equal the source")
  func bytesMatch() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    // 150 chunks and a short final one: runs longer than one batch (64 chunks) too.
    let source = patternBytes(count: 150 * chunk + 777, seed: 41)
    let id = try t.vault.resolve(try t.importBytes(source, name: "v").id)
    let reader = try t.vault.reader(for: id)
    let cases: [(Int, Int)] = [
      (0, source.count), (0, 2 * chunk), (1, 2 * chunk), (chunk - 1, 3 * chunk + 2),
      (5 * chunk, 70 * chunk), (5 * chunk + 9, 100 * chunk),
      (source.count - chunk - 800, chunk + 800),
      (source.count - 2 * chunk - 777, 2 * chunk + 777), (source.count - 1, 1), (3, 10),
    ]
    for (offset, count) in cases {
      let got = try reader.read(offset: UInt64(offset), count: count)
      #expect(got == Array(source[offset..<(offset + count)]), "offset \(offset) count \(count)")
    }
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<50 {
      let offset = Int.random(in: 0..<source.count, using: &generator)
      let count = Int.random(in: 1...(source.count - offset), using: &generator)
      #expect(
        try reader.read(offset: UInt64(offset), count: count)
          == Array(source[offset..<(offset + count)]))
    }
  }

  @Test("a damaged chunk inside a run is named; nothing unverified comes out")
  func damagedInRun() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let source = patternBytes(count: 20 * chunk, seed: 42)
    let id = try t.vault.resolve(try t.importBytes(source, name: "v").id)
    try mutateFile(try t.assetFile("v")) { $0[VaultFormat.headerLength + 7 * slot + 100] ^= 0x04 }
    let reader = try t.vault.reader(for: id)
    #expect(
      throws: VaultError.chunkDamaged(
        asset: id.short, index: 7, reason: "authentication failed")
    ) {
      _ = try reader.read(offset: UInt64(2 * chunk + 5), count: 10 * chunk)
    }
    // The chunks around it still read.
    #expect(try reader.read(offset: 0, count: 7 * chunk) == Array(source[0..<(7 * chunk)]))
    #expect(
      try reader.read(offset: UInt64(8 * chunk), count: 12 * chunk) == Array(source[(8 * chunk)...])
    )
  }

  @Test("a file cut short inside a run is a damaged chunk, not short bytes")
  func truncatedRun() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let source = patternBytes(count: 12 * chunk, seed: 43)
    let id = try t.vault.resolve(try t.importBytes(source, name: "v").id)
    let path = try t.assetFile("v")
    #expect(truncate(path, off_t(VaultFormat.headerLength + 9 * slot + 50)) == 0)
    let reader = try t.vault.reader(for: id)
    #expect(
      throws: VaultError.chunkDamaged(asset: id.short, index: 9, reason: "file is truncated")
    ) {
      _ = try reader.read(offset: 0, count: source.count)
    }
  }
}
