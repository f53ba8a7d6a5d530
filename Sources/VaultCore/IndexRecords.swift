import Foundation
import GRDB

/// The single row of vault-wide settings.
struct SettingsRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "settings"
  var id: Int = 1
  var formatVersion: Int
  var vaultID: Data
  var chunkSize: Int
  var activeKeyID: String
  var createdAt: Double
}

/// A master key the vault knows: its commitment and the naming key wrapped under it.
/// Rotation (a later issue) adds a row per key; `state` is `active` or `decryptOnly`.
struct MasterKeyRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "masterKey"
  var keyID: String
  var commitment: Data
  var wrappedNamingKey: Data
  var state: String
  var createdAt: Double
}

/// One asset: its current generation's wrapped data key, sealed metadata and presence map.
/// Deleting this row destroys the asset (crypto-shredding): the chunks cannot be opened
/// without the wrapped key it holds.
struct AssetRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "asset"
  var id: Data
  var generation: Int64
  var chunkSize: Int
  var length: Int64
  var presence: Data
  var chunksStored: Int
  var keyID: String
  var wrappedKey: Data
  var meta: Data
  var sealCount: Int64
  var pinned: Bool
  var createdAt: Double
  var lastAccess: Double

  var assetID: AssetID { AssetID(bytes: Array(id)) }

  var layout: ChunkLayout { ChunkLayout(chunkSize: chunkSize, length: UInt64(length)) }

  var presenceMap: PresenceMap? {
    PresenceMap(bits: Array(presence), chunkCount: layout.chunkCount)
  }
}
