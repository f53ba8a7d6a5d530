import Foundation
import LoopbackOrigin
import Testing
import VaultCore
import VaultLoader

/// Lines a loader logged, collected across tasks.
final class LogLines: @unchecked Sendable {
  private let lock = NSLock()
  private var lines: [String] = []

  func add(_ line: String) { lock.withLock { lines.append(line) } }
  var all: [String] { lock.withLock { lines } }
}

@Suite("Self-repair, usage counters and limits through the loader")
struct SelfRepairTests {
  let chunk = LoaderFixture.chunk

  /// Flips one bit inside chunk `index`'s ciphertext in the asset's file.
  private func damage(_ f: LoaderFixture, _ id: AssetID, chunk index: Int) throws {
    let info = try f.vault.info(id)
    let path =
      "\(f.vault.directory)/chunks/\(id.hex.prefix(2))/\(id.hex).\(info.generation)"
    let offset = 128 + index * (chunk + 28) + 12 + 100
    let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
    try handle.seek(toOffset: UInt64(offset))
    var byte = try #require(try handle.read(upToCount: 1))
    byte[0] ^= 0x04
    try handle.seek(toOffset: UInt64(offset))
    try handle.write(contentsOf: byte)
    try handle.close()
  }

  @Test("a damaged stored chunk is dropped and fetched again: the bytes come back correct")
  func repairOnline() async throws {
    let log = LogLines()
    let f = try LoaderFixture(log: log.add)
    defer { f.cleanup() }
    let source = media(10 * chunk, seed: 31)
    f.origin.serve("/r.bin", bytes: source, etag: "\"r1\"")
    #expect(try await f.read("/r.bin") == source)
    let id = try f.loader.assetID(for: f.origin.url("/r.bin"))
    try damage(f, id, chunk: 4)
    #expect(try f.vault.verify(id)[0].damagedChunks == [4])

    // A new loader (as after a restart) reads the damaged chunk: the origin is asked for
    // that chunk only, and the reader gets the right bytes.
    f.origin.resetStatistics()
    let again = RangeLoader(vault: f.vault, origin: HTTPOrigin(idleTimeout: 5), log: log.add)
    var got: [UInt8] = []
    for try await piece in again.read(f.origin.url("/r.bin")) { got += piece }
    try await again.flush()
    #expect(got == source)
    #expect(f.origin.bodyBytesSent == chunk)
    #expect(await again.statistics.chunksRepaired == 1)
    #expect(log.all.contains { $0.contains("chunk 4 failed to open") })
    #expect(try f.vault.verify(id)[0].ok)
    #expect(try f.vault.stats().repairs == 1)
  }

  @Test("with the origin unreachable: a clear error, nothing wrong served")
  func repairOffline() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    let source = media(6 * chunk, seed: 32)
    f.origin.serve("/o.bin", bytes: source, etag: "\"o1\"")
    #expect(try await f.read("/o.bin") == source)
    let id = try f.loader.assetID(for: f.origin.url("/o.bin"))
    try damage(f, id, chunk: 2)
    let url = f.origin.url("/o.bin")
    f.origin.stop()
    for offline in [true, false] {
      let loader = RangeLoader(
        vault: f.vault, origin: HTTPOrigin(idleTimeout: 2), offline: offline)
      var got: [UInt8] = []
      do {
        for try await piece in loader.read(url) { got += piece }
        Issue.record("a read through a damaged chunk with no origin succeeded")
      } catch let error as LoaderError {
        // Everything delivered before the error is correct, and stops before chunk 2.
        #expect(got == Array(source.prefix(got.count)))
        #expect(got.count <= 2 * chunk)
        let text = "\(error)"
        #expect(offline ? text.contains("offline") : !text.isEmpty)
      }
    }
  }

  @Test("hits, misses and bytes from cache and origin are counted in the vault")
  func counters() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    let source = media(8 * chunk, seed: 33)
    f.origin.serve("/c.bin", bytes: source)
    // Cold: 8 pieces from the origin. Warm: 8 from the vault. Half warm: 4 + 4.
    _ = try await f.read("/c.bin", from: 0, through: UInt64(4 * chunk - 1))
    _ = try await f.read("/c.bin")
    _ = try await f.read("/c.bin")
    let stats = try f.vault.stats()
    #expect(stats.misses == 8)
    #expect(stats.hits == 4 + 8)
    #expect(
      stats.bytesFromOrigin >= Int64(8 * chunk) && stats.bytesFromOrigin <= Int64(8 * chunk + 2))
    #expect(stats.bytesFromCache == Int64(12 * chunk))
  }

  @Test("a fill that crosses the byte limit evicts the least recently used, not itself")
  func limitsThroughLoader() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    for name in ["one", "two", "three"] {
      f.origin.serve("/\(name)", bytes: media(8 * chunk, seed: UInt64(name.count)))
    }
    _ = try await f.read("/one")
    _ = try await f.read("/two")
    let perAsset = UInt64(128 + 8 * (chunk + 28))
    try f.vault.updateCacheLimits { $0.maxBytes = 2 * perAsset }
    _ = try await f.read("/three")
    // Eviction runs off the loader's actor, and waits for writers released 2 s after
    // their last store: wait for it.
    var names: [String] = []
    for _ in 0..<150 {
      names = try f.vault.list().map(\.name).sorted()
      if names.count == 2 { break }
      try await Task.sleep(nanoseconds: 100_000_000)
    }
    #expect(names == ["three", "two"])
  }
}
