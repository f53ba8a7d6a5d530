import Foundation
import GRDB

/// The SQLite index of a vault: settings, master keys, assets with their wrapped keys and
/// presence maps. Every write that protects an invariant is one method = one transaction.
///
/// WAL mode with `synchronous = FULL` (a committed import survives power loss) and
/// `secure_delete = ON` (a deleted wrapped key is overwritten, not left in a free page).
final class VaultIndex: Sendable {
  let database: DatabasePool

  private init(database: DatabasePool) {
    self.database = database
  }

  /// Opens (and migrates) the index at `path`.
  static func open(path: String) throws -> VaultIndex {
    var configuration = Configuration()
    configuration.busyMode = .timeout(15)
    configuration.prepareDatabase { db in
      try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA secure_delete = ON;")
    }
    do {
      let pool = try DatabasePool(path: path, configuration: configuration)
      try migrator.migrate(pool)
      return VaultIndex(database: pool)
    } catch let error as DatabaseError {
      throw VaultError.indexDamaged(reason: error.message ?? "\(error.resultCode)")
    }
  }

  private static var migrator: DatabaseMigrator {
    var migrator = DatabaseMigrator()
    // Shipped migrations are never edited: add new ones.
    migrator.registerMigration("v1") { db in
      try db.create(table: "settings") { t in
        t.primaryKey("id", .integer, onConflict: .replace).check { $0 == 1 }
        t.column("formatVersion", .integer).notNull()
        t.column("vaultID", .blob).notNull()
        t.column("chunkSize", .integer).notNull()
        t.column("activeKeyID", .text).notNull()
        t.column("createdAt", .double).notNull()
      }
      try db.create(table: "masterKey") { t in
        t.primaryKey("keyID", .text)
        t.column("commitment", .blob).notNull()
        t.column("wrappedNamingKey", .blob).notNull()
        t.column("state", .text).notNull()
        t.column("createdAt", .double).notNull()
      }
      try db.create(table: "asset") { t in
        t.primaryKey("id", .blob)
        t.column("generation", .integer).notNull()
        t.column("chunkSize", .integer).notNull()
        t.column("length", .integer).notNull()
        t.column("presence", .blob).notNull()
        t.column("chunksStored", .integer).notNull()
        t.column("keyID", .text).notNull().indexed()
        t.column("wrappedKey", .blob).notNull()
        t.column("meta", .blob).notNull()
        t.column("sealCount", .integer).notNull()
        t.column("pinned", .boolean).notNull().defaults(to: false)
        t.column("createdAt", .double).notNull()
        t.column("lastAccess", .double).notNull()
      }
    }
    // Sealed vault-wide settings (cache-key rules, later eviction limits): one row per key
    // name, the value sealed under the config key (Vault+Config.swift, FORMAT.md §5).
    migrator.registerMigration("v2-config") { db in
      try db.create(table: "config") { t in
        t.primaryKey("key", .text)
        t.column("value", .blob).notNull()
      }
    }
    // Key rotation: data key copies under decrypt-only keys and the re-encryption queue
    // (VaultIndex+Keys.swift, FORMAT.md §5).
    migrator.registerMigration("v3-keys") { db in
      try createKeyTables(db)
    }
    registerPolicyMigrations(&migrator)
    registerLeaseMigrations(&migrator)
    return migrator
  }

  /// Runs `body` in one read transaction, mapping SQLite errors to ``VaultError``.
  func readTransaction<T>(_ body: (Database) throws -> T) throws -> T {
    try read(body)
  }

  private func read<T>(_ body: (Database) throws -> T) throws -> T {
    do {
      return try database.read(body)
    } catch let error as DatabaseError {
      throw Self.vaultError(error, path: database.path)
    }
  }

  /// Runs `body` in one write transaction, mapping SQLite errors to ``VaultError``.
  func writeTransaction<T>(_ body: (Database) throws -> T) throws -> T {
    try write(body)
  }

  private func write<T>(_ body: (Database) throws -> T) throws -> T {
    do {
      return try database.write(body)
    } catch let error as DatabaseError {
      throw Self.vaultError(error, path: database.path)
    }
  }

  /// A full disk is an I/O error (ENOSPC), not damage: nothing committed is lost.
  static func vaultError(_ error: DatabaseError, path: String) -> VaultError {
    switch error.resultCode {
    case .SQLITE_FULL: return VaultError.io(operation: "write", path: path, errno: ENOSPC)
    case .SQLITE_IOERR: return VaultError.io(operation: "write", path: path, errno: EIO)
    default: return VaultError.indexDamaged(reason: error.message ?? "\(error.resultCode)")
    }
  }

  // MARK: Settings and keys

  /// Writes the settings row and the first master key in one transaction (`vault init`).
  func initialize(settings: SettingsRecord, masterKey: MasterKeyRecord) throws {
    try write { db in
      guard try SettingsRecord.fetchOne(db) == nil else {
        throw VaultError.alreadyExists(path: database.path)
      }
      try settings.insert(db)
      try masterKey.insert(db)
    }
  }

  func settings() throws -> SettingsRecord {
    guard let settings = try read({ try SettingsRecord.fetchOne($0) }) else {
      throw VaultError.indexDamaged(reason: "settings are missing")
    }
    return settings
  }

  func masterKeys() throws -> [MasterKeyRecord] {
    try read { try MasterKeyRecord.fetchAll($0) }
  }

  // MARK: Assets

  func asset(_ id: AssetID) throws -> AssetRecord? {
    try read { try AssetRecord.fetchOne($0, key: Data(id.bytes)) }
  }

  func assets() throws -> [AssetRecord] {
    try read { try AssetRecord.order(Column("createdAt")).fetchAll($0) }
  }

  /// Ids whose hex form starts with `prefix` (case-insensitive).
  func assetIDs(withHexPrefix prefix: String) throws -> [AssetID] {
    try read { db in
      try Data.fetchAll(
        db, sql: "SELECT id FROM asset WHERE hex(id) LIKE ? LIMIT 2",
        arguments: [prefix.uppercased() + "%"]
      ).map { AssetID(bytes: Array($0)) }
    }
  }

  /// Records a complete asset whose file is already written and synced.
  /// - Throws: ``VaultError/duplicateAsset(_:)`` if the id exists,
  ///   ``VaultError/keyDecryptOnly(keyID:activeKeyID:)`` if its key was rotated out.
  func insertAsset(_ record: AssetRecord, name: String, lease: LeaseRecord? = nil) throws {
    try write { db in
      try Self.requireActive(db, keyID: record.keyID)
      guard try AssetRecord.exists(db, key: record.id) == false else {
        throw VaultError.duplicateAsset(name)
      }
      try record.insert(db)
      // After the asset row: its insert trigger drops a stale lease of an earlier asset.
      try lease?.insert(db)
    }
  }

  /// Deletes the asset's row, destroying its wrapped data key, and checkpoints the WAL so
  /// no copy of the key stays in the log. Returns the deleted record.
  @discardableResult
  func deleteAsset(_ id: AssetID) throws -> AssetRecord? {
    let deleted = try write { db -> AssetRecord? in
      guard let record = try AssetRecord.fetchOne(db, key: Data(id.bytes)) else { return nil }
      try record.delete(db)
      // Copies of its data key under decrypt-only keys are shredded in the same transaction.
      try db.execute(sql: "DELETE FROM assetKey WHERE assetID = ?", arguments: [record.id])
      try db.execute(sql: "DELETE FROM reencryption WHERE assetID = ?", arguments: [record.id])
      try db.execute(sql: "DELETE FROM lease WHERE assetID = ?", arguments: [record.id])
      return record
    }
    _ = try? database.writeWithoutTransaction { db in
      try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
    }
    return deleted
  }
}

extension VaultIndex {
  /// Folds the WAL into the main database file (used before copying a vault).
  func checkpoint() throws {
    _ = try database.writeWithoutTransaction { db in
      try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
    }
  }
}
