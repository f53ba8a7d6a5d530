import Foundation

/// What the vault holds and how it has been used (`vault stats`).
///
/// Usage counters are kept in the index, summed over every process that used the vault
/// since it was created or the counters were reset (`vault stats --reset`).
public struct VaultStats: Sendable, Codable, Equatable {
  /// Number of assets (complete or partial).
  public var assets: Int
  /// Assets with every chunk stored.
  public var completeAssets: Int
  /// Bytes the asset files take (header plus one slot per stored chunk).
  public var storedBytes: UInt64
  /// Plaintext bytes stored.
  public var plaintextBytes: UInt64
  /// Pinned assets and their bytes.
  public var pinnedAssets: Int
  public var pinnedBytes: UInt64
  /// The limits in force.
  public var limits: CacheLimits
  /// Chunks read from the vault by the range loader (cache hits).
  public var hits: Int64
  /// Chunks the range loader had to fetch from the origin (misses).
  public var misses: Int64
  /// Bytes the loader delivered from the vault and from the origin.
  public var bytesFromCache: Int64
  public var bytesFromOrigin: Int64
  /// Stored chunks found damaged and dropped so they could be fetched again.
  public var repairs: Int64
  /// Assets evicted by limits or `vault prune`.
  public var evictions: Int64
}

/// Names of the persistent counters (the `counter` table, FORMAT.md §5).
enum CounterName {
  static let hits = "hits"
  static let misses = "misses"
  static let bytesFromCache = "bytesFromCache"
  static let bytesFromOrigin = "bytesFromOrigin"
  static let repairs = "repairs"
  static let evictions = "evictions"
}

extension Vault {
  /// Counts and sizes of what is stored, with the usage counters.
  public func stats() throws -> VaultStats {
    let assets = try index.footprints()
    let counters = try index.counters()
    var plaintext: UInt64 = 0
    var complete = 0
    for asset in assets {
      let layout = ChunkLayout(chunkSize: asset.chunkSize, length: asset.length)
      plaintext += min(UInt64(asset.chunksStored) * UInt64(asset.chunkSize), asset.length)
      if asset.chunksStored == layout.chunkCount { complete += 1 }
    }
    let pinned = assets.filter(\.pinned)
    return VaultStats(
      assets: assets.count, completeAssets: complete,
      storedBytes: assets.reduce(0) { $0 + $1.storedBytes }, plaintextBytes: plaintext,
      pinnedAssets: pinned.count, pinnedBytes: pinned.reduce(0) { $0 + $1.storedBytes },
      limits: try cacheLimits(), hits: counters[CounterName.hits] ?? 0,
      misses: counters[CounterName.misses] ?? 0,
      bytesFromCache: counters[CounterName.bytesFromCache] ?? 0,
      bytesFromOrigin: counters[CounterName.bytesFromOrigin] ?? 0,
      repairs: counters[CounterName.repairs] ?? 0,
      evictions: counters[CounterName.evictions] ?? 0)
  }

  /// Adds to the usage counters (one transaction). The range loader batches its calls.
  public func addCounters(
    hits: Int = 0, misses: Int = 0, bytesFromCache: UInt64 = 0, bytesFromOrigin: UInt64 = 0,
    repairs: Int = 0, evictions: Int = 0
  ) throws {
    try index.addCounters([
      CounterName.hits: Int64(hits), CounterName.misses: Int64(misses),
      CounterName.bytesFromCache: Int64(bytesFromCache),
      CounterName.bytesFromOrigin: Int64(bytesFromOrigin),
      CounterName.repairs: Int64(repairs), CounterName.evictions: Int64(evictions),
    ])
  }

  /// Sets the usage counters back to zero.
  public func resetCounters() throws {
    try index.resetCounters()
  }

  /// Records a read of an asset for LRU eviction. Writes are coalesced: at most one per
  /// asset per ``VaultFormat/accessResolution`` seconds per process.
  public func noteAccess(_ id: AssetID, at now: Date = Date()) {
    let time = now.timeIntervalSince1970
    guard accessTracker.shouldWrite(id, at: time) else { return }
    try? index.touch([id], at: time)
  }
}

/// The last time this process wrote each asset's access time, so a player's many range
/// requests cost one index write per asset per `accessResolution` seconds, not one each.
final class AccessTracker: @unchecked Sendable {
  private let lock = NSLock()
  private var written: [AssetID: Double] = [:]

  func shouldWrite(_ id: AssetID, at time: Double) -> Bool {
    lock.withLock {
      if let last = written[id], time - last < VaultFormat.accessResolution, time >= last {
        return false
      }
      if written.count > 100_000 { written.removeAll(keepingCapacity: true) }
      written[id] = time
      return true
    }
  }
}
