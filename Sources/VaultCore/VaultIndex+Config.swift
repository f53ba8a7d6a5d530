import Foundation
import GRDB

/// One sealed vault-wide setting (table `config`, migration `v2-config`).
struct ConfigRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "config"
  var key: String
  var value: Data
}

extension VaultIndex {
  /// The sealed value stored under `key`, if any.
  func configValue(_ key: String) throws -> Data? {
    do {
      return try database.read { try ConfigRecord.fetchOne($0, key: key)?.value }
    } catch let error as DatabaseError {
      throw VaultError.indexDamaged(reason: error.message ?? "\(error.resultCode)")
    }
  }

  /// Reads the sealed value under `key`, lets `body` compute the new one (`nil` deletes the
  /// row) and writes it, all in one write transaction, so concurrent edits are not lost.
  func updateConfigValue(_ key: String, _ body: (Data?) throws -> Data?) throws {
    try writeTransaction { db in
      let old = try ConfigRecord.fetchOne(db, key: key)?.value
      if let new = try body(old) {
        try ConfigRecord(key: key, value: new).save(db)
      } else if old != nil {
        try ConfigRecord.deleteOne(db, key: key)
      }
    }
  }
}
