import Foundation
import GRDB

/// A copy of one asset generation's data key wrapped under a rotated-out (decrypt-only)
/// master key (table `assetKey`, migration `v3-keys`). `asset.wrappedKey` always holds the
/// wrap under the active key; these copies let the old key keep opening the vault until
/// it is retired, which deletes them.
struct AssetKeyRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "assetKey"
  var assetID: Data
  var generation: Int64
  var keyID: String
  var wrappedKey: Data
}

/// One asset a re-encryption job still has to move to a new generation (table
/// `reencryption`, migration `v3-keys`). The row is deleted in the transaction that flips
/// the asset, so the table is exactly the work left.
struct ReencryptionRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "reencryption"
  var assetID: Data
  var queuedAt: Double
}

/// Master key states in `masterKey.state`.
enum MasterKeyState {
  /// Wraps the naming key and every data key; new data keys are wrapped under it.
  static let active = "active"
  /// Rotated out: still opens the vault (naming key and `assetKey` copies) until retired.
  static let decryptOnly = "decryptOnly"
}

extension VaultIndex {
  /// Migration `v3-keys`: data key copies under decrypt-only keys, and the re-encryption job.
  static func createKeyTables(_ db: Database) throws {
    try db.create(table: "assetKey") { t in
      t.column("assetID", .blob).notNull()
      t.column("generation", .integer).notNull()
      t.column("keyID", .text).notNull().indexed()
      t.column("wrappedKey", .blob).notNull()
      t.primaryKey(["assetID", "generation", "keyID"])
    }
    try db.create(table: "reencryption") { t in
      t.primaryKey("assetID", .blob)
      t.column("queuedAt", .double).notNull()
    }
  }

  /// The data key of `id` at `generation` wrapped under `keyID`, if a copy exists.
  func assetKeyCopy(_ id: AssetID, generation: Int64, keyID: String) throws -> Data? {
    try readTransaction { db in
      try AssetKeyRecord.fetchOne(
        db, key: ["assetID": Data(id.bytes), "generation": generation, "keyID": keyID]
      )?.wrappedKey
    }
  }

  /// Throws unless `keyID` is the vault's active key. Called inside every write transaction
  /// that wraps a new data key, so a process that opened the vault before a rotation cannot
  /// record a key wrapped under a key that is now decrypt-only.
  static func requireActive(_ db: Database, keyID: String) throws {
    guard let settings = try SettingsRecord.fetchOne(db) else {
      throw VaultError.indexDamaged(reason: "settings are missing")
    }
    guard settings.activeKeyID == keyID else {
      throw VaultError.keyDecryptOnly(keyID: keyID, activeKeyID: settings.activeKeyID)
    }
  }

  /// Asset ids still queued for re-encryption, oldest first.
  func reencryptionQueue() throws -> [AssetID] {
    try readTransaction { db in
      try ReencryptionRecord.order(Column("queuedAt"), Column("assetID")).fetchAll(db)
        .map { AssetID(bytes: Array($0.assetID)) }
    }
  }

  /// Adds assets to the re-encryption queue (already queued ones keep their place).
  func enqueueReencryption(_ ids: [AssetID]) throws {
    let now = Date().timeIntervalSince1970
    try writeTransaction { db in
      for id in ids {
        try db.execute(
          sql: "INSERT OR IGNORE INTO reencryption (assetID, queuedAt) VALUES (?, ?)",
          arguments: [Data(id.bytes), now])
      }
    }
  }

  /// Drops an asset from the re-encryption queue (it was removed meanwhile).
  func dequeueReencryption(_ id: AssetID) throws {
    try writeTransaction { db in
      _ = try ReencryptionRecord.deleteOne(db, key: Data(id.bytes))
    }
  }
}
