import Foundation
import GRDB
import VaultCrypto

/// What one ``Vault/reencrypt(assets:progress:)`` call did.
public struct ReencryptionSummary: Sendable, Codable, Equatable {
  /// Assets moved to a new generation under a new data key.
  public var assets: Int
  /// Chunks opened and re-sealed.
  public var chunks: Int
  /// Plaintext bytes re-sealed.
  public var bytes: UInt64
  /// Leftover files of interrupted imports, re-encryptions or removals that were deleted.
  public var orphanFilesRemoved: Int
}

extension Vault {
  /// Re-encrypts assets whose data keys may be exposed: each gets a new random data key and
  /// a new generation; every stored chunk is opened and sealed again (fresh random nonce)
  /// into a new file `<id>.<generation+1>`, which is fsynced, then one index transaction
  /// flips the asset to it (new wrapped key under the active master key, resealed
  /// metadata, copies under decrypt-only keys dropped, queue entry removed), then the old
  /// file is unlinked. Chunks are never resealed under a data key that sealed them before.
  ///
  /// The work list is the `reencryption` table, so the job is **resumable**: after a crash
  /// or Ctrl-C, calling this again (with no ids) continues with the assets not yet flipped.
  /// An asset interrupted half-way starts over under a fresh data key; its half-written
  /// file, and any old file a crash left after a flip, is deleted first.
  /// - Parameters:
  ///   - ids: assets to add to the job; `nil` continues an unfinished job, or queues every
  ///     asset if there is none.
  ///   - progress: called after each batch with the plaintext bytes re-sealed.
  /// - Returns: what was done.
  /// - Throws: ``VaultError/keyOperationBusy(path:)``,
  ///   ``VaultError/keyDecryptOnly(keyID:activeKeyID:)`` unless opened with the active key,
  ///   ``VaultError/assetBusy(_:)`` if a loader is filling an asset,
  ///   ``VaultError/chunkDamaged(asset:index:reason:)`` if a stored chunk fails to open (the
  ///   asset keeps its old generation), I/O errors.
  @discardableResult
  public func reencrypt(
    assets ids: [AssetID]? = nil, progress: ((OperationProgress) -> Void)? = nil
  ) throws -> ReencryptionSummary {
    try withKeyOperationLock {
      let settings = try index.settings()
      guard settings.activeKeyID == masterKey.keyID else {
        throw VaultError.keyDecryptOnly(keyID: masterKey.keyID, activeKeyID: settings.activeKeyID)
      }
      var summary = ReencryptionSummary(
        assets: 0, chunks: 0, bytes: 0, orphanFilesRemoved: removeOrphanFiles())
      if let ids {
        try index.enqueueReencryption(ids)
      } else if try index.reencryptionQueue().isEmpty {
        try index.enqueueReencryption(try index.assets().map(\.assetID))
      }
      CrashPoint.reach("reencrypt-after-enqueue")
      var records: [AssetRecord] = []
      for id in try index.reencryptionQueue() {
        if let record = try index.asset(id) {
          records.append(record)
        } else {
          try index.dequeueReencryption(id)
        }
      }
      let total = records.reduce(UInt64(0)) { $0 + Self.storedPlaintext($1) }
      var done: UInt64 = 0
      for record in records {
        summary.chunks += try reencryptOne(record) { bytes in
          done += bytes
          progress?(OperationProgress(bytesDone: done, bytesTotal: total))
        }
        summary.assets += 1
      }
      summary.bytes = done
      // Old wrapped keys may linger in the WAL; fold it into the (secure_delete) database.
      try? index.checkpoint()
      return summary
    }
  }

  private static func storedPlaintext(_ record: AssetRecord) -> UInt64 {
    guard let map = record.presenceMap else { return 0 }
    let layout = record.layout
    return map.indices.reduce(UInt64(0)) { $0 + UInt64(layout.plaintextLength($1)) }
  }

  /// Moves one asset to a new generation; returns the chunks re-sealed.
  private func reencryptOne(_ record: AssetRecord, advance: (UInt64) -> Void) throws -> Int {
    let id = record.assetID
    let name = id.short
    let oldGeneration = UInt64(record.generation)
    let oldKeys = try unwrapKeys(record)
    let metadata = try AssetMetadata.open(
      Array(record.meta), keys: oldKeys, assetID: id, generation: oldGeneration)
    guard let presence = record.presenceMap else {
      throw VaultError.assetDamaged(asset: name, reason: "its presence map does not fit")
    }
    let layout = record.layout
    let oldPath = assetPath(id, generation: oldGeneration)
    // The old file's writer lock keeps a range loader from adding chunks meanwhile.
    let oldFile = try AssetFile.openForWriting(oldPath, asset: name)
    var headerBytes = [UInt8](repeating: 0, count: VaultFormat.headerLength)
    let n = try headerBytes.withUnsafeMutableBytes { try oldFile.read(into: $0, at: 0) }
    let oldHeader = try AssetHeader.decode(
      Array(headerBytes[0..<n]), headerKey: oldKeys.headerKey, asset: name)
    guard oldHeader.assetID == id, oldHeader.generation == oldGeneration,
      oldHeader.chunkSize == record.chunkSize
    else {
      throw VaultError.assetDamaged(asset: name, reason: "its header does not match the index")
    }

    let newGeneration = oldGeneration + 1
    let newKeys = try AssetKeys.generate()
    let newHeader = try AssetHeader(
      chunkSize: record.chunkSize, assetID: id, generation: newGeneration,
      totalLength: oldHeader.totalLength, validator: metadata.validator,
      headerKey: newKeys.headerKey)
    let newPath = assetPath(id, generation: newGeneration)
    // A file left at the new name by an interrupted run is replaced (its key is lost).
    let newFile = try AssetFile.createForWriting(newPath, asset: name) {
      try index.asset(id).map { UInt64($0.generation) == newGeneration } ?? false
    }
    var committed = false
    PartialFiles.register(newPath)
    defer {
      PartialFiles.unregister(newPath)
      if !committed { FileSystem.remove(newPath) }
    }
    try newHeader.encoded().withUnsafeBytes { try newFile.write($0, at: 0) }

    let opener = try ChunkCrypter(
      key: oldKeys.chunkKey, chunkSize: record.chunkSize, headerMAC: oldHeader.mac,
      workers: workers)
    let sealer = try ChunkCrypter(
      key: newKeys.chunkKey, chunkSize: record.chunkSize, headerMAC: newHeader.mac,
      workers: workers)
    let buffers = ChunkBuffers(chunkSize: record.chunkSize, workers: workers)
    // Writes overlap with reading and sealing the next batch (two alternating buffers).
    let writer = SlotWriter(file: newFile, bufferSize: buffers.chunksPerBatch * layout.slotSize)
    var batchNumber = 0
    var resealed = 0
    for run in presence.storedRuns(in: 0..<layout.chunkCount) {
      var first = run.lowerBound
      while first < run.upperBound {
        let batch = first..<min(first + buffers.chunksPerBatch, run.upperBound)
        let last = batch.upperBound - 1
        let spanStart = layout.slotOffset(batch.lowerBound)
        let spanLength =
          (batch.count - 1) * layout.slotSize + layout.plaintextLength(last)
          + VaultFormat.slotOverhead
        let span = UnsafeMutableRawBufferPointer(rebasing: buffers.slots[0..<spanLength])
        let read = try oldFile.read(into: span, at: spanStart)
        guard read == spanLength else {
          throw VaultError.chunkDamaged(
            asset: name, index: batch.lowerBound + read / layout.slotSize,
            reason: "file is truncated")
        }
        let failures = opener.open(
          slots: UnsafeRawBufferPointer(span), plaintext: buffers.plaintext,
          firstIndex: batch.lowerBound, count: batch.count,
          length: { layout.plaintextLength(batch.lowerBound + $0) },
          isFinal: { layout.isFinal(batch.lowerBound + $0) })
        if let failure = failures.first {
          count(refused: failures.count)
          throw VaultError.chunkDamaged(asset: name, index: failure.index, reason: failure.reason)
        }
        let sealed = try writer.acquire(batchNumber)
        try sealer.seal(
          plaintext: UnsafeRawBufferPointer(buffers.plaintext), slots: sealed,
          firstIndex: batch.lowerBound, count: batch.count,
          lastLength: layout.plaintextLength(last), lastIsFinal: layout.isFinal(last))
        writer.write(batchNumber, length: spanLength, at: spanStart)
        batchNumber += 1
        count(opened: batch.count, sealed: batch.count)
        resealed += batch.count
        advance(
          UInt64((batch.count - 1) * layout.chunkSize + layout.plaintextLength(last)))
        CrashPoint.reach("reencrypt-mid-file")
        first = batch.upperBound
      }
    }
    try writer.finish()
    // The new chunks reach the disk before the index points at them.
    try newFile.sync()
    FileSystem.syncDirectory(FileSystem.parent(of: newPath))
    CrashPoint.reach("reencrypt-before-flip")
    let wrapped = try wrap(newKeys, assetID: id, generation: newGeneration)
    let meta = try metadata.sealed(keys: newKeys, assetID: id, generation: newGeneration)
    // From the flip on, the new file is the asset: Ctrl-C must no longer delete it. (Before
    // the flip an interrupted run leaves an orphan, which the next run deletes.)
    PartialFiles.unregister(newPath)
    try index.flipGeneration(
      record, to: newGeneration, keyID: masterKey.keyID, wrappedKey: Data(wrapped),
      meta: Data(meta), sealCount: Int64(resealed))
    committed = true
    CrashPoint.reach("reencrypt-after-flip")
    FileSystem.remove(oldPath)
    FileSystem.syncDirectory(FileSystem.parent(of: oldPath))
    return resealed
  }

  /// Deletes asset files the index does not point at and no writer holds: the half-written
  /// file of an interrupted re-encryption or import, the old generation a crash left after
  /// a flip, a file whose row `rm` deleted. Each file's lock is checked before the index is
  /// read, because writers record their row before they release the lock.
  /// - Returns: the number of files removed.
  func removeOrphanFiles() -> Int {
    let chunks = directory + "/" + VaultFormat.chunksDirectoryName
    var removed = 0
    for prefix in FileSystem.listDirectory(chunks) {
      let folder = chunks + "/" + prefix
      for name in FileSystem.listDirectory(folder) {
        let parts = name.split(separator: ".")
        guard parts.count == 2, let id = AssetID(hex: String(parts[0])),
          let generation = Int64(parts[1])
        else { continue }
        let path = folder + "/" + name
        if AssetFile.isLockedByWriter(path) { continue }
        let record: AssetRecord?
        do {
          record = try index.asset(id)
        } catch {
          continue  // index unreadable: keep the file
        }
        if let record, record.generation == generation { continue }
        FileSystem.remove(path)
        removed += 1
      }
      if removed > 0 { FileSystem.syncDirectory(folder) }
    }
    return removed
  }
}

extension VaultIndex {
  /// Points an asset at its re-encrypted generation, in one transaction: checks nothing
  /// changed since `record` was read, replaces generation, wrapped key, metadata and seal
  /// count, drops data key copies under decrypt-only keys (they wrap the old data key) and
  /// the asset's queue entry.
  func flipGeneration(
    _ record: AssetRecord, to generation: UInt64, keyID: String, wrappedKey: Data, meta: Data,
    sealCount: Int64
  ) throws {
    try writeTransaction { db in
      try Self.requireActive(db, keyID: keyID)
      guard var current = try AssetRecord.fetchOne(db, key: record.id),
        current.generation == record.generation, current.presence == record.presence
      else {
        throw VaultError.assetDamaged(
          asset: record.assetID.short, reason: "it changed while it was being re-encrypted")
      }
      current.generation = Int64(generation)
      current.keyID = keyID
      current.wrappedKey = wrappedKey
      current.meta = meta
      current.sealCount = sealCount
      try current.update(db)
      try db.execute(sql: "DELETE FROM assetKey WHERE assetID = ?", arguments: [record.id])
      try db.execute(sql: "DELETE FROM reencryption WHERE assetID = ?", arguments: [record.id])
    }
  }
}
