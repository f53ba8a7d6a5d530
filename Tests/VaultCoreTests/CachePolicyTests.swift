import Foundation
import Testing

@testable import VaultCore

/// Limits, LRU eviction, pinning and the persistent counters, on real files and SQLite.
@Suite("Cache policy: limits, eviction, pinning, stats")
struct CachePolicyTests {
  let chunk = 16_384

  /// Imports assets a, b, c, d (4 chunks each) with last-access times 100 s apart.
  private func fourAssets(_ t: TestVault) throws -> [String: AssetID] {
    var ids: [String: AssetID] = [:]
    let base = Date().timeIntervalSince1970 - 10_000
    for (offset, name) in ["a", "b", "c", "d"].enumerated() {
      let info = try t.importBytes(patternBytes(count: 4 * chunk, seed: UInt64(offset)), name: name)
      let id = try #require(AssetID(hex: info.id))
      try t.vault.index.touch([id], at: base + Double(offset) * 100)
      ids[name] = id
    }
    return ids
  }

  private func footprint(_ t: TestVault, chunks: Int) -> UInt64 {
    UInt64(VaultFormat.headerLength + chunks * (chunk + VaultFormat.slotOverhead))
  }

  @Test("over the byte limit, the least recently used go first; pinned ones never")
  func lruOrder() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let ids = try fourAssets(t)
    // b is read now: it becomes the most recently used; a is pinned.
    _ = try t.vault.reader(for: ids["b"]!)
    try t.vault.setPinned(ids["a"]!, true)
    let one = footprint(t, chunks: 4)
    let report = try t.vault.prune(limits: CacheLimits(maxBytes: 2 * one))
    #expect(report.evicted.map(\.name) == ["c", "d"])
    #expect(report.evicted.allSatisfy { $0.reason == "size" })
    #expect(report.bytesBefore == 4 * one && report.bytesAfter == 2 * one)
    #expect(try t.vault.list().map(\.name).sorted() == ["a", "b"])
    // The evicted files are gone, and so are their keys.
    #expect(throws: VaultError.self) { try t.vault.reader(for: ids["c"]!) }
    let files = FileManager.default.enumerator(atPath: t.vault.directory + "/chunks")?
      .compactMap { $0 as? String }.filter { $0.count > 3 }
    #expect(files?.count == 2)
    #expect(try t.vault.stats().evictions == 2)
  }

  @Test("pinned data alone over the limit: said so, nothing pinned evicted")
  func pinnedOverLimit() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let ids = try fourAssets(t)
    for name in ["a", "b", "c"] { try t.vault.setPinned(ids[name]!, true) }
    let report = try t.vault.prune(limits: CacheLimits(maxBytes: footprint(t, chunks: 4)))
    #expect(report.pinnedOverLimit)
    #expect(report.evicted.map(\.name) == ["d"])
    #expect(try t.vault.list().count == 3)
  }

  @Test("the age limit evicts what was not read for longer, and a dry run changes nothing")
  func ageLimit() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let ids = try fourAssets(t)
    // a and b were last read 10000 and 9900 s ago; c and d 9800 and 9700 s ago.
    let limits = CacheLimits(maxAge: 9850)
    let dry = try t.vault.prune(limits: limits, dryRun: true)
    #expect(dry.evicted.map(\.name) == ["a", "b"])
    #expect(dry.evicted.allSatisfy { $0.reason == "age" })
    #expect(try t.vault.list().count == 4)
    try t.vault.setPinned(ids["a"]!, true)
    let real = try t.vault.prune(limits: limits)
    #expect(real.evicted.map(\.name) == ["b"])
    #expect(try t.vault.list().map(\.name).sorted() == ["a", "c", "d"])
  }

  @Test("limits in the config are enforced by the import that crosses them")
  func enforcedOnImport() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    _ = try fourAssets(t)
    try t.vault.updateCacheLimits { $0.maxBytes = 3 * footprint(t, chunks: 4) }
    #expect(try t.vault.cacheLimits().maxBytes == 3 * footprint(t, chunks: 4))
    try t.importBytes(patternBytes(count: 4 * chunk, seed: 9), name: "e")
    // a and b (least recently used) made room; e, just written, is kept.
    #expect(try t.vault.list().map(\.name).sorted() == ["c", "d", "e"])
    #expect(try t.vault.stats().storedBytes == 3 * footprint(t, chunks: 4))
  }

  @Test("an asset a writer holds is skipped, not evicted")
  func busyWriter() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let writer = try t.vault.beginFill(
      identity: .contentID("busy"), length: UInt64(4 * chunk), validator: "\"v1\"",
      metadata: AssetMetadata(name: "busy"))
    try patternBytes(count: 2 * chunk, seed: 3).withUnsafeBytes {
      _ = try writer.store(firstIndex: 0, plaintext: $0)
    }
    let report = try t.vault.prune(limits: CacheLimits(maxBytes: 1))
    #expect(report.evicted.isEmpty)
    #expect(report.busy == [writer.assetID.hex])
    #expect(try t.vault.list().count == 1)
  }

  @Test("stats count assets, bytes, pinned bytes and the counters; reset zeroes the counters")
  func stats() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let ids = try fourAssets(t)
    try t.vault.setPinned(ids["d"]!, true)
    try t.vault.addCounters(hits: 3, misses: 2, bytesFromCache: 300, bytesFromOrigin: 200)
    try t.vault.addCounters(hits: 1, repairs: 1)
    let stats = try t.vault.stats()
    #expect(stats.assets == 4 && stats.completeAssets == 4)
    #expect(stats.storedBytes == 4 * footprint(t, chunks: 4))
    #expect(stats.plaintextBytes == UInt64(16 * chunk))
    #expect(stats.pinnedAssets == 1 && stats.pinnedBytes == footprint(t, chunks: 4))
    #expect(stats.hits == 4 && stats.misses == 2 && stats.repairs == 1)
    #expect(stats.bytesFromCache == 300 && stats.bytesFromOrigin == 200)
    try t.vault.resetCounters()
    #expect(try t.vault.stats().hits == 0)
  }

  @Test("reads update the last-access time at most once per resolution")
  func accessCoalesced() throws {
    let t = try TestVault(chunkSize: chunk)
    defer { t.cleanup() }
    let ids = try fourAssets(t)
    let id = try #require(ids["a"])
    let start = Date()
    t.vault.noteAccess(id, at: start)
    #expect(try t.vault.index.asset(id)?.lastAccess == start.timeIntervalSince1970)
    t.vault.noteAccess(id, at: start.addingTimeInterval(1))
    #expect(try t.vault.index.asset(id)?.lastAccess == start.timeIntervalSince1970)
    let later = start.addingTimeInterval(VaultFormat.accessResolution + 1)
    t.vault.noteAccess(id, at: later)
    #expect(try t.vault.index.asset(id)?.lastAccess == later.timeIntervalSince1970)
  }
}
