import Foundation

/// What a prune did (or, with `dryRun`, would do).
public struct PruneReport: Sendable, Codable, Equatable {
  /// One evicted asset.
  public struct Evicted: Sendable, Codable, Equatable {
    /// Asset id (hex).
    public var id: String
    /// Asset name, when its metadata opens.
    public var name: String?
    /// Bytes its file took.
    public var bytes: UInt64
    /// When it was last read (seconds since 1970).
    public var lastAccess: Double
    /// `age` (unread for longer than the age limit) or `size` (least recently used while
    /// the vault was over its byte limit).
    public var reason: String
  }

  /// The assets evicted, in eviction order.
  public var evicted: [Evicted] = []
  /// Bytes of all asset files before.
  public var bytesBefore: UInt64 = 0
  /// Bytes of all asset files after (as it would be, for a dry run).
  public var bytesAfter: UInt64 = 0
  /// Bytes of pinned assets (never evicted).
  public var pinnedBytes: UInt64 = 0
  /// The limits applied.
  public var limits: CacheLimits
  /// Whether the pinned assets alone exceed the byte limit (nothing pinned is evicted).
  public var pinnedOverLimit = false
  /// Ids of assets left alone because a writer (or a protected reader) was using them.
  public var busy: [String] = []
  /// Whether nothing was changed.
  public var dryRun: Bool
}

extension Vault {
  /// Evicts whole unpinned assets: first every asset unread for longer than
  /// `limits.maxAge`, then the least recently used until the files fit `limits.maxBytes`.
  ///
  /// Each eviction takes the asset file's writer lock first (an asset being written, in
  /// this process or another, is skipped and listed as busy), then deletes the index row
  /// (destroying the wrapped data key) only if it still names the same generation, then
  /// unlinks the file.
  /// - Parameters:
  ///   - limits: the limits to apply (``cacheLimits()`` for the vault's own).
  ///   - dryRun: report what would be evicted; change nothing.
  ///   - now: the time the age limit is measured from.
  ///   - protecting: assets not to evict (for example the ones a server is streaming).
  public func prune(
    limits: CacheLimits, dryRun: Bool = false, now: Date = Date(),
    protecting: Set<AssetID> = []
  ) throws -> PruneReport {
    let assets = try index.footprints()
    var report = PruneReport(limits: limits, dryRun: dryRun)
    report.bytesBefore = assets.reduce(0) { $0 + $1.storedBytes }
    report.pinnedBytes = assets.filter(\.pinned).reduce(0) { $0 + $1.storedBytes }
    var total = report.bytesBefore
    if let maxBytes = limits.maxBytes, report.pinnedBytes > maxBytes {
      report.pinnedOverLimit = true
    }
    let cutoff = limits.maxAge.map { now.timeIntervalSince1970 - $0 }
    var candidates: [(AssetFootprint, String)] = []
    for asset in assets where !asset.pinned {
      if let cutoff, asset.lastAccess < cutoff {
        candidates.append((asset, "age"))
      }
    }
    let aged = Set(candidates.map { $0.0.id })
    // Least recently used first (footprints come sorted by lastAccess).
    let bySize = assets.filter { !$0.pinned && !aged.contains($0.id) }
    var next = bySize.makeIterator()
    var index = 0
    var batch: [(AssetFootprint, FileLock)] = []
    // Rows whose generation changed since the listing are not evicted after all.
    func flush() throws {
      guard !batch.isEmpty else { return }
      let gone = try evict(batch)
      for (asset, _) in batch where !gone.contains(asset.id) {
        total += asset.storedBytes
        report.evicted.removeAll { $0.id == asset.id.hex }
        report.busy.append(asset.id.hex)
      }
      batch = []
    }
    while index < candidates.count || (limits.maxBytes.map { total > $0 } ?? false) {
      let asset: AssetFootprint
      let reason: String
      if index < candidates.count {
        (asset, reason) = candidates[index]
        index += 1
      } else if let lru = next.next() {
        (asset, reason) = (lru, "size")
      } else {
        break
      }
      if protecting.contains(asset.id) {
        report.busy.append(asset.id.hex)
        continue
      }
      let name = (try? info(asset.id))?.name
      if !dryRun {
        // Lock now (a busy asset does not count towards the limit), remove in batches.
        let lock = FileLock(path: assetPath(asset.id, generation: asset.generation))
        guard lock.tryExclusive() else {
          report.busy.append(asset.id.hex)
          continue
        }
        batch.append((asset, lock))
        if batch.count >= Self.evictionBatch { try flush() }
      }
      total -= min(total, asset.storedBytes)
      report.evicted.append(
        PruneReport.Evicted(
          id: asset.id.hex, name: name, bytes: asset.storedBytes, lastAccess: asset.lastAccess,
          reason: reason))
    }
    try flush()
    report.bytesAfter = total
    if !dryRun && !report.evicted.isEmpty { try? addCounters(evictions: report.evicted.count) }
    return report
  }

  /// Applies the vault's own limits if the files exceed them; nil when no limit is set or
  /// nothing is over. Called after writes (import, the loader's stores).
  @discardableResult
  public func enforceLimits(protecting: Set<AssetID> = []) throws -> PruneReport? {
    let limits = try cacheLimits()
    guard !limits.isEmpty else { return nil }
    let report = try prune(limits: limits, protecting: protecting)
    return report.evicted.isEmpty ? nil : report
  }

  /// Assets removed per index transaction by `prune` (each holds an open file until then).
  static let evictionBatch = 256

  /// Removes locked assets: their rows in one transaction (only those still at the listed
  /// generation), one WAL checkpoint, then their files. The unlinks are not fsynced: the
  /// durable step is the row (the key) going; a file that comes back after a crash opens
  /// nothing and is an orphan the next open removes.
  /// - Returns: the ids removed.
  private func evict(_ batch: [(AssetFootprint, FileLock)]) throws -> Set<AssetID> {
    let deleted = try index.deleteAssets(batch.map { ($0.0.id, $0.0.generation) })
    for (asset, lock) in batch where deleted.contains(asset.id) {
      FileSystem.remove(assetPath(asset.id, generation: asset.generation))
      lock.release()
    }
    return deleted
  }
}

/// A non-blocking writer lock on an existing file, for removers (eviction, reconciliation):
/// a file being written is left alone. A missing file counts as unlocked.
final class FileLock {
  let path: String
  private var descriptor: Int32
  private let missing: Bool

  init(path: String) {
    self.path = path
    descriptor = posixOpen(path, O_RDONLY | O_CLOEXEC)
    missing = descriptor < 0 && errno == ENOENT
  }

  deinit { release() }

  /// Takes the lock if nobody holds it.
  func tryExclusive() -> Bool {
    guard descriptor >= 0 else { return missing }
    return flock(descriptor, LOCK_EX | LOCK_NB) == 0
  }

  /// Releases the lock and closes the file.
  func release() {
    if descriptor >= 0 { _ = close(descriptor) }
    descriptor = -1
  }
}
