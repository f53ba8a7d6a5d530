import Foundation
import VaultCrypto

/// What the vault knows about an asset that must not be stored in clear: its name, content
/// type and (for the loader) origin URL and validator. Sealed as JSON under the asset's
/// meta key, so it is destroyed with the data key.
public struct AssetMetadata: Sendable, Codable, Equatable {
  /// The name or content id the asset was imported or fetched under.
  public var name: String
  /// MIME type, if known.
  public var contentType: String?
  /// Origin URL the bytes came from (range loader), if any.
  public var originURL: String?
  /// Origin validator (ETag or Last-Modified) of the stored generation, if any.
  public var validator: String?
  /// True when the asset carries a lease (FORMAT.md §4): a `lease` row must then exist, so
  /// deleting that row without the key is detected.
  public var leased: Bool?

  /// Creates metadata.
  public init(
    name: String, contentType: String? = nil, originURL: String? = nil, validator: String? = nil,
    leased: Bool? = nil
  ) {
    self.leased = leased
    self.name = name
    self.contentType = contentType
    self.originURL = originURL
    self.validator = validator
  }

  func sealed(keys: AssetKeys, assetID: AssetID, generation: UInt64) throws -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    var json = Array(try encoder.encode(self))
    defer { SecureMemory.cleanse(&json) }
    return try cryptoCall {
      try ChaChaPoly.seal(
        json, key: keys.metaKey,
        aad: AssetKeys.metaAAD(assetID: assetID, generation: generation))
    }
  }

  static func open(
    _ sealed: [UInt8], keys: AssetKeys, assetID: AssetID, generation: UInt64
  ) throws -> AssetMetadata {
    var json: [UInt8]
    do {
      json = try ChaChaPoly.open(
        sealed, key: keys.metaKey, aad: AssetKeys.metaAAD(assetID: assetID, generation: generation))
    } catch {
      throw VaultError.assetDamaged(asset: assetID.short, reason: "metadata failed authentication")
    }
    defer { SecureMemory.cleanse(&json) }
    do {
      return try JSONDecoder().decode(AssetMetadata.self, from: Data(json))
    } catch {
      throw VaultError.assetDamaged(asset: assetID.short, reason: "metadata is malformed")
    }
  }
}
