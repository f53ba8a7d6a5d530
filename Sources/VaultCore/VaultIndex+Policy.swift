import Foundation
import GRDB

/// What eviction and reconciliation need of an asset row, without its keys or metadata.
struct AssetFootprint: Sendable {
  var id: AssetID
  var generation: UInt64
  var chunkSize: Int
  var length: UInt64
  var chunksStored: Int
  var pinned: Bool
  var lastAccess: Double

  /// Bytes the asset's file takes: the header plus one slot per stored chunk.
  var storedBytes: UInt64 {
    UInt64(VaultFormat.headerLength)
      + UInt64(chunksStored) * UInt64(chunkSize + VaultFormat.slotOverhead)
  }
}

extension VaultIndex {
  /// The persistent usage counters (`vault stats`): one row per counter name.
  static func registerPolicyMigrations(_ migrator: inout DatabaseMigrator) {
    migrator.registerMigration("v3-counters") { db in
      try db.create(table: "counter") { t in
        t.primaryKey("name", .text)
        t.column("value", .integer).notNull()
      }
    }
  }

  /// Every asset's footprint, least recently used first.
  func footprints() throws -> [AssetFootprint] {
    try readTransaction { db in
      try Row.fetchAll(
        db,
        sql: """
          SELECT id, generation, chunkSize, length, chunksStored, pinned, lastAccess
          FROM asset ORDER BY lastAccess, id
          """
      ).map { row in
        AssetFootprint(
          id: AssetID(bytes: Array(row["id"] as Data)),
          generation: UInt64(row["generation"] as Int64), chunkSize: row["chunkSize"],
          length: UInt64(row["length"] as Int64), chunksStored: row["chunksStored"],
          pinned: row["pinned"], lastAccess: row["lastAccess"])
      }
    }
  }

  /// Deletes an asset's row only if it is still at `generation` (eviction must not remove
  /// a generation another writer just started). Checkpoints like ``deleteAsset(_:)``.
  /// - Returns: whether the row was deleted.
  func deleteAsset(_ id: AssetID, ifGeneration generation: UInt64) throws -> Bool {
    let deleted = try writeTransaction { db -> Bool in
      try db.execute(
        sql: "DELETE FROM asset WHERE id = ? AND generation = ?",
        arguments: [Data(id.bytes), Int64(generation)])
      guard db.changesCount > 0 else { return false }
      try db.execute(sql: "DELETE FROM lease WHERE assetID = ?", arguments: [Data(id.bytes)])
      return true
    }
    if deleted { try? checkpoint() }
    return deleted
  }

  /// Deletes several assets' rows in one transaction, each only if still at the given
  /// generation, then checkpoints the WAL once. Returns the ids deleted.
  func deleteAssets(_ assets: [(AssetID, UInt64)]) throws -> Set<AssetID> {
    let deleted = try writeTransaction { db -> Set<AssetID> in
      var done = Set<AssetID>()
      for (id, generation) in assets {
        try db.execute(
          sql: "DELETE FROM asset WHERE id = ? AND generation = ?",
          arguments: [Data(id.bytes), Int64(generation)])
        if db.changesCount > 0 {
          done.insert(id)
          try db.execute(sql: "DELETE FROM lease WHERE assetID = ?", arguments: [Data(id.bytes)])
        }
      }
      return done
    }
    if !deleted.isEmpty { try? checkpoint() }
    return deleted
  }

  /// Clears presence bits (chunks that failed to open, or lie past the end of the file),
  /// if the asset is still at `generation`. One transaction.
  /// - Returns: how many bits were set before.
  @discardableResult
  func clearChunks(_ id: AssetID, generation: UInt64, indices: [Int]) throws -> Int {
    try writeTransaction { db in
      guard var record = try AssetRecord.fetchOne(db, key: Data(id.bytes)),
        UInt64(record.generation) == generation, var map = record.presenceMap
      else { return 0 }
      var cleared = 0
      for index in indices where index >= 0 && index < map.chunkCount && map.contains(index) {
        map.remove(index)
        cleared += 1
      }
      guard cleared > 0 else { return 0 }
      record.presence = Data(map.bits)
      record.chunksStored = map.count
      try record.update(db, columns: ["presence", "chunksStored"])
      return cleared
    }
  }

  /// Sets the last-access time of several assets in one transaction.
  func touch(_ ids: [AssetID], at time: Double) throws {
    guard !ids.isEmpty else { return }
    try writeTransaction { db in
      for id in ids {
        try db.execute(
          sql: "UPDATE asset SET lastAccess = ? WHERE id = ?", arguments: [time, Data(id.bytes)])
      }
    }
  }

  /// Adds to the persistent counters in one transaction.
  func addCounters(_ deltas: [String: Int64]) throws {
    let changes = deltas.filter { $0.value != 0 }
    guard !changes.isEmpty else { return }
    try writeTransaction { db in
      for (name, delta) in changes {
        try db.execute(
          sql: """
            INSERT INTO counter (name, value) VALUES (?, ?)
            ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
            """,
          arguments: [name, delta])
      }
    }
  }

  /// The persistent counters.
  func counters() throws -> [String: Int64] {
    try readTransaction { db in
      var result: [String: Int64] = [:]
      for row in try Row.fetchAll(db, sql: "SELECT name, value FROM counter") {
        result[row["name"]] = row["value"]
      }
      return result
    }
  }

  /// Sets every counter back to zero.
  func resetCounters() throws {
    try writeTransaction { db in try db.execute(sql: "DELETE FROM counter") }
  }
}
