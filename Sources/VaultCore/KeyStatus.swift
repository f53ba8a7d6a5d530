import Foundation
import GRDB

/// What `vault key status` shows: the master keys a vault knows, how many data keys each
/// wraps, and whether a re-encryption job is unfinished.
public struct KeyStatus: Sendable, Codable, Equatable {
  /// One master key known to the vault.
  public struct Key: Sendable, Codable, Equatable {
    /// The key id (16 hex digits).
    public var keyID: String
    /// `active` (wraps new data keys) or `decryptOnly` (rotated out, not yet retired).
    public var state: String
    /// Asset data keys wrapped under this key.
    public var assets: Int
    /// When the key was added to the vault.
    public var createdAt: Date
  }

  /// `settings.formatVersion`: 1, or 2 while a decrypt-only key remains.
  public var formatVersion: Int
  /// The key new data keys are wrapped under.
  public var activeKeyID: String
  /// The key this vault was opened with.
  public var openedWithKeyID: String
  /// Every key the vault knows, the active one first.
  public var keys: [Key]
  /// Assets stored.
  public var assets: Int
  /// Assets a re-encryption job still has to re-encrypt (0 when none is unfinished).
  public var reencryptionPending: Int
}

extension Vault {
  /// The vault's master keys, asset counts per key and any unfinished re-encryption.
  /// Works when the vault was opened with a decrypt-only key too.
  public func keyStatus() throws -> KeyStatus {
    try index.readTransaction { db in
      guard let settings = try SettingsRecord.fetchOne(db) else {
        throw VaultError.indexDamaged(reason: "settings are missing")
      }
      var counts: [String: Int] = [:]
      for row in try Row.fetchAll(db, sql: "SELECT keyID, COUNT(*) AS n FROM asset GROUP BY keyID")
      {
        counts[row["keyID"], default: 0] += row["n"] as Int
      }
      for row in try Row.fetchAll(
        db, sql: "SELECT keyID, COUNT(*) AS n FROM assetKey GROUP BY keyID")
      {
        counts[row["keyID"], default: 0] += row["n"] as Int
      }
      let keys = try MasterKeyRecord.fetchAll(db)
        .map {
          KeyStatus.Key(
            keyID: $0.keyID, state: $0.state, assets: counts[$0.keyID] ?? 0,
            createdAt: Date(timeIntervalSince1970: $0.createdAt))
        }
        .sorted {
          ($0.state == MasterKeyState.active ? 0 : 1, $0.createdAt) < (
            $1.state == MasterKeyState.active ? 0 : 1, $1.createdAt
          )
        }
      return KeyStatus(
        formatVersion: settings.formatVersion, activeKeyID: settings.activeKeyID,
        openedWithKeyID: masterKey.keyID, keys: keys,
        assets: try AssetRecord.fetchCount(db),
        reencryptionPending: try ReencryptionRecord.fetchCount(db))
    }
  }
}
