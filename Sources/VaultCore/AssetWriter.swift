import Foundation
import VaultCrypto

/// Fills one generation of a cached asset chunk by chunk, in any order (the range loader
/// stores whatever run of chunks an origin response delivered).
///
/// Each ``store(firstIndex:plaintext:)`` seals the chunks, writes them, fsyncs the file and
/// only then sets their presence bits in one transaction, so the index never claims bytes
/// that are not on disk. (The range loader instead records first and syncs when it lets the
/// writer go: see ``commit(_:syncFirst:)``.) A chunk already present is never sealed again within a generation:
/// one slot holds one plaintext per generation (FORMAT.md relies on it).
///
/// The writer holds the asset file's writer lock (flock) for its lifetime: one writer per
/// asset across processes. Not thread-safe: callers serialise their calls (except that
/// ``commit(_:)`` may run on a second thread alongside ``write(firstIndex:plaintext:)``).
public final class AssetWriter {
  /// The asset being filled.
  public let assetID: AssetID
  /// The generation this writer fills.
  public let generation: UInt64
  /// Total plaintext length.
  public let length: UInt64
  /// Chunk geometry.
  public var chunkSize: Int { layout.chunkSize }
  /// Number of chunks the complete asset has.
  public var chunkCount: Int { layout.chunkCount }

  let layout: ChunkLayout
  private let vault: Vault
  private let file: AssetFile
  private let crypter: ChunkCrypter
  private var slots: UnsafeMutableRawBufferPointer
  private var slotsCapacity: Int
  /// The presence bits as of this writer's last look, plus what it committed since.
  private let mirror = Locked<PresenceMap?>(nil)
  /// Whether a commit recorded chunks without syncing them (``syncRecorded()`` clears it).
  private let unsynced = Locked(false)
  /// Seals reserved in the index and not used yet.
  private var sealsReserved = 0
  /// Seals reserved per index commit: one commit per block instead of one per store.
  /// Unused reservations only make `sealCount` err on the safe side.
  private let sealBlock = 4096

  init(
    vault: Vault, assetID: AssetID, generation: UInt64, layout: ChunkLayout, keys: AssetKeys,
    headerMAC: [UInt8], file: AssetFile
  ) throws {
    self.vault = vault
    self.assetID = assetID
    self.generation = generation
    self.length = layout.length
    self.layout = layout
    self.file = file
    crypter = try ChunkCrypter(
      key: keys.chunkKey, chunkSize: layout.chunkSize, headerMAC: headerMAC,
      workers: vault.workers)
    slotsCapacity = 0
    slots = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 64)
  }

  deinit {
    slots.deallocate()
  }

  /// The chunks currently recorded as stored.
  public func presence() throws -> PresenceMap {
    guard let record = try vault.index.asset(assetID), UInt64(record.generation) == generation,
      let map = record.presenceMap
    else {
      throw VaultError.assetDamaged(asset: assetID.short, reason: "its generation was replaced")
    }
    return map
  }

  /// Seals and records consecutive whole chunks starting at `firstIndex`. `plaintext` must
  /// hold exactly those chunks: each `chunkSize` long except the asset's final chunk.
  /// Chunks already stored are skipped (never resealed in one generation).
  /// - Returns: the number of chunks newly stored.
  /// - Throws: ``VaultError/invalidArgument(_:)`` for a misaligned run,
  ///   ``VaultError/sealLimitReached(asset:)``, I/O errors.
  @discardableResult
  public func store(firstIndex: Int, plaintext: UnsafeRawBufferPointer) throws -> Int {
    let pending = try write(firstIndex: firstIndex, plaintext: plaintext)
    try commit(pending)
    return pending.count
  }

  /// The first half of ``store(firstIndex:plaintext:)``: seals and writes the chunks not
  /// stored yet, and records nothing. ``commit(_:)`` then syncs and records them.
  ///
  /// Split so a caller can write the next run while the previous one is being synced (the
  /// disk is busy with one while the CPU seals the other). `commit` may run on another
  /// thread than `write`, one call of each at a time, in the order of the writes.
  public func write(firstIndex: Int, plaintext: UnsafeRawBufferPointer) throws -> PendingChunks {
    guard firstIndex >= 0, firstIndex < layout.chunkCount || plaintext.isEmpty else {
      throw VaultError.invalidArgument("chunk \(firstIndex) is outside the asset")
    }
    if plaintext.isEmpty { return PendingChunks(runs: []) }
    let start = UInt64(firstIndex) * UInt64(layout.chunkSize)
    let end = start + UInt64(plaintext.count)
    let lastIndex = Int((end - 1) / UInt64(layout.chunkSize))
    guard end <= length,
      end == length || end % UInt64(layout.chunkSize) == 0
    else {
      throw VaultError.invalidArgument(
        "bytes \(start)..<\(end) are not whole chunks of asset \(assetID.short)")
    }
    let range = firstIndex..<(lastIndex + 1)
    // The mirror is exact for chunks this writer stored (it holds the asset's lock); a
    // chunk it shows present may since have been dropped (self-repair), so only then is
    // the index asked. Fresh chunks, the common case, cost no index read.
    var present = try knownPresence()
    if range.contains(where: { present.contains($0) }) {
      present = try presence()
      mirror.withLock { $0 = present }
    }
    let runs = missingRuns(in: range, present: present)
    for run in runs {
      try seal(run: run, from: plaintext, base: firstIndex)
    }
    return PendingChunks(runs: runs)
  }

  /// The second half of ``store(firstIndex:plaintext:)``: fsyncs the file, then sets the
  /// chunks' presence bits in one transaction (the index never claims unsynced bytes).
  ///
  /// With `syncFirst` false the bits are set at once and the sync is left to
  /// ``syncRecorded()``: the range loader's choice, so a player is not held to the disk's
  /// sync speed. A process crash loses nothing (the bytes are in the page cache); after an
  /// OS crash or power loss a recorded chunk may read back wrong, which its tag detects
  /// (`chunkDamaged`), and the loader drops and fetches it again (FORMAT.md §7).
  public func commit(_ pending: PendingChunks, syncFirst: Bool = true) throws {
    guard !pending.runs.isEmpty else { return }
    if syncFirst {
      try file.sync()
    } else {
      unsynced.withLock { $0 = true }
    }
    try vault.index.recordChunks(assetID, generation: generation, runs: pending.runs)
    mirror.withLock { map in
      for run in pending.runs {
        for index in run { map?.insert(index) }
      }
    }
    vault.count(sealed: pending.count)
  }

  /// fsyncs the chunks that ``commit(_:syncFirst:)`` recorded without a sync; does nothing
  /// if there are none.
  public func syncRecorded() throws {
    guard
      unsynced.withLock({ flag in
        defer { flag = false }
        return flag
      })
    else { return }
    do {
      try file.sync()
    } catch {
      unsynced.withLock { $0 = true }
      throw error
    }
  }

  /// The presence map as this writer knows it: read once, then kept up to date by
  /// `commit` (which may run on another thread, hence the lock).
  private func knownPresence() throws -> PresenceMap {
    if let map = mirror.withLock({ $0 }) { return map }
    let map = try presence()
    mirror.withLock { $0 = map }
    return map
  }

  private func missingRuns(in range: Range<Int>, present: PresenceMap) -> [Range<Int>] {
    var runs: [Range<Int>] = []
    var runStart: Int?
    for i in range {
      if present.contains(i) {
        if let s = runStart { runs.append(s..<i) }
        runStart = nil
      } else if runStart == nil {
        runStart = i
      }
    }
    if let s = runStart { runs.append(s..<range.upperBound) }
    return runs
  }

  private func reserveSeals(_ count: Int) throws {
    if sealsReserved >= count {
      sealsReserved -= count
      return
    }
    let needed = count - sealsReserved
    let block = max(needed, sealBlock)
    do {
      try vault.index.reserveSeals(assetID, generation: generation, count: block)
      sealsReserved += block - count
    } catch VaultError.sealLimitReached where block > needed {
      // Near the cap: reserve exactly what this store needs.
      try vault.index.reserveSeals(assetID, generation: generation, count: needed)
      sealsReserved = 0
    }
  }

  private func seal(run: Range<Int>, from plaintext: UnsafeRawBufferPointer, base: Int) throws {
    let lastLength = layout.plaintextLength(run.upperBound - 1)
    let sealedBytes = (run.count - 1) * layout.slotSize + lastLength + VaultFormat.slotOverhead
    if sealedBytes > slotsCapacity {
      slots.deallocate()
      slots = .allocate(byteCount: sealedBytes, alignment: 64)
      slotsCapacity = sealedBytes
    }
    let from = (run.lowerBound - base) * layout.chunkSize
    let to = from + (run.count - 1) * layout.chunkSize + lastLength
    try crypter.seal(
      plaintext: UnsafeRawBufferPointer(rebasing: plaintext[from..<to]), slots: slots,
      firstIndex: run.lowerBound, count: run.count, lastLength: lastLength,
      lastIsFinal: run.upperBound == layout.chunkCount)
    // Reserve the seals before using the nonces, then write; `commit` syncs and records.
    try reserveSeals(run.count)
    try file.write(
      UnsafeRawBufferPointer(rebasing: slots[0..<sealedBytes]),
      at: layout.slotOffset(run.lowerBound))
  }
}

/// Chunks an ``AssetWriter`` wrote and has not recorded yet: hand them to
/// ``AssetWriter/commit(_:)``.
public struct PendingChunks: Sendable {
  /// The runs of chunks written (chunks already stored were skipped).
  public let runs: [Range<Int>]
  /// How many chunks were written.
  public var count: Int { runs.reduce(0) { $0 + $1.count } }

  init(runs: [Range<Int>]) { self.runs = runs }

  /// Several writes committed together (one fsync, one transaction).
  public init(combining parts: [PendingChunks]) {
    runs = parts.flatMap(\.runs)
  }
}
