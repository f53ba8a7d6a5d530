import VaultCrypto

/// An asset's opaque id: `HMAC-SHA256(naming key, "vault v1 asset id" ‖ 0x00 ‖ identity)`.
/// It names the asset's file on disk and its index row; without the naming key it says
/// nothing about which content or URL is cached.
public struct AssetID: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The 32 id bytes.
  public let bytes: [UInt8]

  /// Wraps 32 id bytes.
  init(bytes: [UInt8]) {
    self.bytes = bytes
  }

  /// Parses 64 hex digits.
  /// - Parameter hex: the full id in hex.
  public init?(hex: String) {
    guard hex.utf8.count == 64, let bytes = Bytes.fromHex(hex) else { return nil }
    self.bytes = bytes
  }

  /// Derives the id of `identity` under the vault's naming key.
  static func derive(identity: AssetIdentity, namingKey: SymmetricKey) throws -> AssetID {
    var message = Array(VaultFormat.labelAssetID.utf8)
    message.append(0)
    message += Array(identity.canonical.utf8)
    return AssetID(
      bytes: try cryptoCall { try HMACSHA256.authenticationCode(for: message, key: namingKey) })
  }

  /// The id as 64 lower-case hex digits.
  public var hex: String { Bytes.hex(bytes) }

  /// The first 12 hex digits: what `vault list` shows and commands accept as a prefix.
  public var short: String { String(hex.prefix(12)) }

  public var description: String { hex }

  public static func < (lhs: AssetID, rhs: AssetID) -> Bool {
    lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
  }
}

/// What an asset is, independent of where its bytes came from. Two requests with the same
/// identity share one asset. Imports and explicit content ids use `id:NAME`; the range
/// loader will use `url:CANONICAL-URL` for URLs without a content id.
public struct AssetIdentity: Sendable, Hashable {
  /// The canonical identity string fed to the HMAC.
  public let canonical: String

  /// An identity given by the caller: a content id or an import name.
  public static func contentID(_ name: String) -> AssetIdentity {
    AssetIdentity(canonical: "id:" + name)
  }

  /// An identity from a canonicalised origin URL.
  public static func url(canonical: String) -> AssetIdentity {
    AssetIdentity(canonical: "url:" + canonical)
  }
}
