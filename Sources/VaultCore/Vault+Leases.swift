import Foundation

extension Vault {
  /// Puts a lease on a stored asset, or replaces its policy. The row is MACed under the
  /// lease key and the asset's sealed metadata is flagged `leased` in the same
  /// transaction, so the lease can be neither edited nor dropped without the key.
  /// - Parameters:
  ///   - lease: the policy.
  ///   - id: the asset.
  ///   - resetCounters: start first-play time and play count afresh (default: keep them,
  ///     so extending a rental does not hand out new plays).
  /// - Returns: the stored lease state.
  /// - Throws: ``VaultError/unknownAsset(_:)``, ``VaultError/invalidArgument(_:)``,
  ///   ``VaultError/leaseExpired(asset:denial:)`` (`tampered`) when the old row is not authentic.
  @discardableResult
  public func setLease(_ lease: Lease, on id: AssetID, resetCounters: Bool = false) throws
    -> LeaseState
  {
    try lease.validate()
    let stored = try updateLease(id) { current in
      let now = clock.now()
      guard var state = current, !resetCounters else {
        return LeaseState(
          lease: lease, firstPlayAt: nil, plays: 0, lastPlayAt: nil,
          seenAt: max(now, current?.seenAt ?? now))
      }
      state.lease = lease
      state.seenAt = state.effectiveTime(now)
      return state
    }
    guard let stored else { throw VaultError.unknownAsset(id.short) }
    return stored
  }

  /// Removes an asset's lease: it plays without limits again.
  /// - Throws: ``VaultError/unknownAsset(_:)``.
  public func clearLease(on id: AssetID) throws {
    _ = try updateLease(id, allowTampered: true) { _ in nil }
  }

  /// The asset's lease with its counters, or nil if it has none.
  /// - Throws: ``VaultError/unknownAsset(_:)``; ``VaultError/leaseExpired(asset:denial:)``
  ///   (`tampered`) when the lease row fails authentication or was deleted.
  public func leaseState(of id: AssetID) throws -> LeaseState? {
    guard let (record, row) = try index.assetAndLease(id) else {
      throw VaultError.unknownAsset(id.short)
    }
    return try authenticLease(record: record, row: row)
  }

  /// The one lease check every read path calls (range loader, `VaultServer`, export): throws
  /// if the asset's lease refuses a read starting at `offset` now, else records what the
  /// read means for the lease (first play, a new play) in one transaction.
  ///
  /// A *play* starts with a read that begins in the asset's first chunk, or with any read
  /// while nothing was played yet; reads within ``VaultFormat/playCoalescing`` seconds of
  /// the last counted play are the same play. Lease time is the clock's, never earlier
  /// than the latest time the lease recorded. An asset whose lease has run out by time (or
  /// whose last play's grace period is over) is shredded here, lazily: its wrapped key is
  /// destroyed first, then its file. A check costs one index read, or none when it would
  /// record nothing and this process read the lease less than
  /// ``VaultFormat/leaseCheckReuse`` seconds before.
  /// - Parameters:
  ///   - id: the asset; an asset that is not stored passes (nothing to protect).
  ///   - offset: the first byte the read wants.
  ///   - countsAsPlay: false for reads that are not playback (a prefetch): the lease is
  ///     checked, nothing is counted.
  /// - Throws: ``VaultError/leaseExpired(asset:denial:)``.
  public func authorizeRead(_ id: AssetID, from offset: UInt64, countsAsPlay: Bool = true) throws {
    if let recent = recentLeases.withLock({ $0[id] }),
      ProcessInfo.processInfo.systemUptime - recent.at < VaultFormat.leaseCheckReuse
    {
      // A warm check that would change nothing: judged on the state read a moment ago.
      guard let state = recent.state else { return }
      let time = state.effectiveTime(clock.now())
      if state.denial(at: time) == nil, state.firstPlayAt != nil,
        !countsAsPlay
          || !state.startsPlay(offset: offset, chunkSize: recent.chunkSize, at: time)
      {
        return
      }
    }
    for _ in 0..<8 {
      guard let check = try index.leaseCheck(id) else { return }
      let readAt = ProcessInfo.processInfo.systemUptime
      guard let row = check.lease else {
        if try isFlaggedLeased(id, meta: check.meta) {
          throw VaultError.leaseExpired(asset: id.short, denial: .tampered)
        }
        recentLeases.withLock { $0[id] = (nil, check.chunkSize, readAt) }
        return
      }
      guard row.isAuthentic(key: leaseKey, assetCreatedAt: check.createdAt) else {
        throw VaultError.leaseExpired(asset: id.short, denial: .tampered)
      }
      let state = row.state
      let time = state.effectiveTime(clock.now())
      if let denial = state.denial(at: time) {
        recentLeases.withLock { _ = $0.removeValue(forKey: id) }
        try? shred(id)
        throw VaultError.leaseExpired(asset: id.short, denial: denial)
      }
      recentLeases.withLock { $0[id] = (state, check.chunkSize, readAt) }
      guard countsAsPlay else { return }
      var next = state
      if next.firstPlayAt == nil { next.firstPlayAt = time }
      if next.startsPlay(offset: offset, chunkSize: check.chunkSize, at: time) {
        if let limit = next.lease.maxPlays, next.plays >= limit {
          throw VaultError.leaseExpired(asset: id.short, denial: .playsExhausted(limit: limit))
        }
        next.plays += 1
        next.lastPlayAt = time
      }
      guard next != state else { return }
      next.seenAt = time
      let updated = try LeaseRecord(
        assetID: id, assetCreatedAt: check.createdAt, state: next, key: leaseKey)
      if try index.replaceLease(
        updated, assetID: id, expectedMeta: check.meta, newMeta: nil, expectedMAC: row.mac)
      {
        recentLeases.withLock { $0[id] = (next, check.chunkSize, readAt) }
        return
      }
      // Another process counted a play meanwhile: check again on its state.
    }
    throw VaultError.assetBusy(id.short)
  }

  /// Crypto-shreds an asset: its wrapped data key (and every copy under decrypt-only keys,
  /// its lease and queue entries) is deleted in one transaction with `secure_delete`, the
  /// WAL is checkpointed, and only then is its file unlinked. Same as ``remove(_:)``.
  /// - Throws: ``VaultError/unknownAsset(_:)``.
  public func shred(_ id: AssetID) throws {
    try remove(id)
  }

  /// Shreds every asset whose lease refuses all reads now (expired, play window closed,
  /// last play over). Leases that fail authentication are left alone and counted.
  /// - Returns: the assets shredded, with why, and how many leases were not authentic.
  public func shredExpired() throws -> (shredded: [(AssetID, LeaseDenial)], tampered: Int) {
    let now = clock.now()
    var shredded: [(AssetID, LeaseDenial)] = []
    var tampered = 0
    for row in try index.leases() {
      let id = AssetID(bytes: Array(row.assetID))
      guard let (record, current) = try index.assetAndLease(id), let current else { continue }
      guard current.isAuthentic(key: leaseKey, assetCreatedAt: record.createdAt) else {
        tampered += 1
        continue
      }
      let state = current.state
      guard let denial = state.denial(at: state.effectiveTime(now)) else { continue }
      do {
        try shred(id)
        shredded.append((id, denial))
      } catch VaultError.unknownAsset {
        continue
      }
    }
    return (shredded, tampered)
  }

  /// The lease summary `list`/`info` show, nil without a lease.
  func leaseSummary(record: AssetRecord, row: LeaseRecord?) -> LeaseSummary? {
    do {
      return try authenticLease(record: record, row: row).map {
        LeaseSummary(state: $0, at: clock.now())
      }
    } catch {
      return .tampered
    }
  }

  // MARK: Internals

  /// The verified state of `row`, nil if the asset has no lease.
  /// - Throws: `leaseExpired(tampered)` if the row fails its MAC, or is missing while the
  ///   sealed metadata says the asset is leased.
  func authenticLease(record: AssetRecord, row: LeaseRecord?) throws -> LeaseState? {
    let id = record.assetID
    guard let row else {
      if try isFlaggedLeased(id, meta: record.meta, record: record) {
        throw VaultError.leaseExpired(asset: id.short, denial: .tampered)
      }
      return nil
    }
    guard row.isAuthentic(key: leaseKey, assetCreatedAt: record.createdAt) else {
      throw VaultError.leaseExpired(asset: id.short, denial: .tampered)
    }
    return row.state
  }

  /// Whether the asset's sealed metadata carries the `leased` flag (cached per sealed blob).
  private func isFlaggedLeased(_ id: AssetID, meta: Data, record: AssetRecord? = nil) throws
    -> Bool
  {
    if let cached = leasedFlags.withLock({ $0[id] }), cached.meta == meta {
      return cached.leased
    }
    guard let record = try record ?? index.asset(id) else { return false }
    let metadata = try AssetMetadata.open(
      Array(record.meta), keys: try unwrapKeys(record), assetID: id,
      generation: UInt64(record.generation))
    let leased = metadata.leased == true
    leasedFlags.withLock { $0[id] = (record.meta, leased) }
    return leased
  }

  /// Read-modify-write of an asset's lease: `change` gets the current state (nil: none)
  /// and returns the new one (nil: remove). The metadata flag follows in the same
  /// transaction; retried if another writer came first.
  private func updateLease(
    _ id: AssetID, allowTampered: Bool = false, _ change: (LeaseState?) throws -> LeaseState?
  ) throws -> LeaseState? {
    for _ in 0..<8 {
      guard let (record, row) = try index.assetAndLease(id) else {
        throw VaultError.unknownAsset(id.short)
      }
      var current: LeaseState?
      do {
        current = try authenticLease(record: record, row: row)
      } catch VaultError.leaseExpired(_, .tampered) where allowTampered {
        current = nil
      }
      let next = try change(current)
      let keys = try unwrapKeys(record)
      let generation = UInt64(record.generation)
      var metadata = try AssetMetadata.open(
        Array(record.meta), keys: keys, assetID: id, generation: generation)
      var newMeta: Data?
      if (metadata.leased == true) != (next != nil) {
        metadata.leased = next != nil ? true : nil
        newMeta = Data(try metadata.sealed(keys: keys, assetID: id, generation: generation))
      }
      let newRow = try next.map {
        try LeaseRecord(assetID: id, assetCreatedAt: record.createdAt, state: $0, key: leaseKey)
      }
      if try index.replaceLease(
        newRow, assetID: id, expectedMeta: record.meta, newMeta: newMeta, expectedMAC: row?.mac)
      {
        leasedFlags.withLock { _ = $0.removeValue(forKey: id) }
        recentLeases.withLock { _ = $0.removeValue(forKey: id) }
        return next
      }
    }
    throw VaultError.assetBusy(id.short)
  }
}
