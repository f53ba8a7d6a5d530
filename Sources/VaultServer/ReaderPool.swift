import VaultCore

/// Idle asset readers kept between requests, so a player's many small range requests do
/// not each pay for opening one: unwrapping the asset's keys, reading its header and
/// recording the access time (a synced SQLite commit, about 2 ms here).
///
/// A reader is reused only while its generation is current (``AssetReader/refreshPresence()``
/// also reloads which chunks are stored) and for at most ``maximumAge``, so an asset that is
/// being played still has its access time recorded about that often.
final class ReaderPool: Sendable {
  /// An open reader and the chunk size of its asset.
  struct Lease: @unchecked Sendable {
    // `@unchecked`: a lease is held by one response at a time (taken out of the pool, and
    // only put back once that response is done with it).
    let reader: AssetReader
    let chunkSize: Int
    let opened: ContinuousClock.Instant
  }

  static let maximumAge: Duration = .seconds(30)
  private static let perAsset = 4
  private static let total = 64
  private let idle = Locked([AssetID: [Lease]]())

  /// A reader of `id`: an idle current one, else a new one. Blocking: call on the pool.
  func take(_ id: AssetID, vault: Vault) throws -> Lease {
    while let lease = idle.withLock({ $0[id]?.popLast() }) {
      if ContinuousClock.now - lease.opened < Self.maximumAge,
        (try? lease.reader.refreshPresence()) == true
      {
        return lease
      }
    }
    let reader = try vault.reader(for: id)
    return Lease(reader: reader, chunkSize: try vault.info(id).chunkSize, opened: .now)
  }

  /// Puts back a reader whose response finished normally.
  func give(_ lease: Lease) {
    guard ContinuousClock.now - lease.opened < Self.maximumAge else { return }
    idle.withLock { idle in
      guard idle.values.reduce(0, { $0 + $1.count }) < Self.total,
        idle[lease.reader.assetID, default: []].count < Self.perAsset
      else { return }
      idle[lease.reader.assetID, default: []].append(lease)
    }
  }
}
