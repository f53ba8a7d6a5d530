import Foundation
import GRDB

/// The columns a lease check needs (``VaultIndex/leaseCheck(_:)``).
struct LeaseCheck {
  var meta: Data
  var createdAt: Double
  var chunkSize: Int
  var lease: LeaseRecord?
}

extension VaultIndex {
  /// Migration `v4-leases`: the `lease` table, and a trigger that drops a stale lease row
  /// when an asset is stored anew under the same id (a new `createdAt`); a new generation
  /// keeps `createdAt` and so its lease.
  static func registerLeaseMigrations(_ migrator: inout DatabaseMigrator) {
    migrator.registerMigration("v4-leases") { db in
      try db.create(table: "lease") { t in
        t.primaryKey("assetID", .blob)
        t.column("assetCreatedAt", .double).notNull()
        t.column("notAfter", .double)
        t.column("maxAgeAfterFirstPlay", .double)
        t.column("maxPlays", .integer)
        t.column("firstPlayAt", .double)
        t.column("plays", .integer).notNull()
        t.column("lastPlayAt", .double)
        t.column("seenAt", .double).notNull()
        t.column("mac", .blob).notNull()
      }
      try db.execute(
        sql: """
          CREATE TRIGGER "lease_stale" AFTER INSERT ON "asset" BEGIN
            DELETE FROM "lease" WHERE "assetID" = NEW."id"
              AND "assetCreatedAt" != NEW."createdAt";
          END
          """)
    }
  }

  /// An asset's row and its lease row, read together.
  func assetAndLease(_ id: AssetID) throws -> (AssetRecord, LeaseRecord?)? {
    try readTransaction { db in
      guard let record = try AssetRecord.fetchOne(db, key: Data(id.bytes)) else { return nil }
      return (record, try LeaseRecord.fetchOne(db, key: Data(id.bytes)))
    }
  }

  /// What a lease check reads: the asset's sealed metadata, `createdAt` and chunk size and
  /// its lease row, in one query that does not decode the whole asset row (the check runs
  /// before every loader read and server request).
  func leaseCheck(_ id: AssetID) throws -> LeaseCheck? {
    try readTransaction { db in
      guard
        let row = try Row.fetchOne(
          db,
          sql: """
            SELECT a.meta AS assetMeta, a.createdAt AS assetCreated, a.chunkSize AS assetChunk, l.*
            FROM asset a LEFT JOIN lease l ON l.assetID = a.id WHERE a.id = ?
            """, arguments: [Data(id.bytes)])
      else { return nil }
      let mac: Data? = row["mac"]
      return LeaseCheck(
        meta: row["assetMeta"], createdAt: row["assetCreated"], chunkSize: row["assetChunk"],
        lease: mac == nil ? nil : try LeaseRecord(row: row))
    }
  }

  /// Every lease row.
  func leases() throws -> [LeaseRecord] {
    try readTransaction { try LeaseRecord.fetchAll($0) }
  }

  /// Writes `lease` (and, if given, the asset's resealed metadata) in one transaction,
  /// only if the asset row still has `meta == expectedMeta` and the lease row still has
  /// the MAC `expectedMAC` (nil: no row). Returns false if another writer came first.
  func replaceLease(
    _ lease: LeaseRecord?, assetID: AssetID, expectedMeta: Data, newMeta: Data?,
    expectedMAC: Data?
  ) throws -> Bool {
    try writeTransaction { db in
      let key = Data(assetID.bytes)
      guard let record = try AssetRecord.fetchOne(db, key: key), record.meta == expectedMeta,
        try LeaseRecord.fetchOne(db, key: key)?.mac == expectedMAC
      else { return false }
      if let newMeta {
        try db.execute(sql: "UPDATE asset SET meta = ? WHERE id = ?", arguments: [newMeta, key])
      }
      _ = try LeaseRecord.deleteOne(db, key: key)
      try lease?.insert(db)
      return true
    }
  }
}
