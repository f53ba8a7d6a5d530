import Foundation
import GRDB

extension VaultIndex {
  /// Counts `count` seals against the asset generation's key before they are used, so the
  /// cap holds even if the process dies after sealing. One transaction.
  /// - Throws: ``VaultError/sealLimitReached(asset:)``, or asset damaged if the generation
  ///   was replaced meanwhile.
  func reserveSeals(_ id: AssetID, generation: UInt64, count: Int) throws {
    try writeTransaction { db in
      let record = try Self.current(db, id, generation)
      guard record.sealCount + Int64(count) <= VaultFormat.sealLimit else {
        throw VaultError.sealLimitReached(asset: id.short)
      }
      try db.execute(
        sql: "UPDATE asset SET sealCount = sealCount + ? WHERE id = ?",
        arguments: [count, Data(id.bytes)])
    }
  }

  /// Sets the presence bits of chunks whose slots are written and synced. One transaction.
  func recordChunks(_ id: AssetID, generation: UInt64, indices: Range<Int>) throws {
    try recordChunks(id, generation: generation, runs: [indices])
  }

  /// Sets the presence bits of several runs of synced chunks. One transaction.
  func recordChunks(_ id: AssetID, generation: UInt64, runs: [Range<Int>]) throws {
    try writeTransaction { db in
      var record = try Self.current(db, id, generation)
      guard var map = record.presenceMap else {
        throw VaultError.assetDamaged(asset: id.short, reason: "its presence map does not fit")
      }
      for run in runs {
        for i in run where i < map.chunkCount { map.insert(i) }
      }
      record.presence = Data(map.bits)
      record.chunksStored = map.count
      try record.update(db, columns: ["presence", "chunksStored"])
    }
  }

  /// Records a new, empty generation of an asset, replacing any older one (its wrapped key
  /// goes with it, so its chunks can no longer be opened). Keeps `pinned` and `createdAt`.
  ///
  /// Compare-and-swap: the caller decided to start this generation after seeing generation
  /// `expected` (nil: no record). If another process recorded or replaced the asset since,
  /// nothing is written and ``VaultError/assetBusy(_:)`` says to look again; otherwise two
  /// fillers that both saw no record would replace each other's fresh generation.
  /// - Returns: the replaced record, if any, so its file can be removed.
  func replaceGeneration(_ record: AssetRecord, expected: Int64?) throws -> AssetRecord? {
    try writeTransaction { db in
      try Self.requireActive(db, keyID: record.keyID)
      let old = try AssetRecord.fetchOne(db, key: record.id)
      guard old?.generation == expected else {
        throw VaultError.assetBusy(AssetID(bytes: Array(record.id)).short)
      }
      var fresh = record
      if let old {
        fresh.pinned = old.pinned
        fresh.createdAt = old.createdAt
        try old.delete(db)
        // Copies of the replaced generation's key under decrypt-only keys die with it.
        try db.execute(sql: "DELETE FROM assetKey WHERE assetID = ?", arguments: [old.id])
      }
      try fresh.insert(db)
      return old
    }
  }

  private static func current(_ db: Database, _ id: AssetID, _ generation: UInt64) throws
    -> AssetRecord
  {
    guard let record = try AssetRecord.fetchOne(db, key: Data(id.bytes)),
      UInt64(record.generation) == generation
    else {
      throw VaultError.assetDamaged(asset: id.short, reason: "its generation was replaced")
    }
    return record
  }
}
