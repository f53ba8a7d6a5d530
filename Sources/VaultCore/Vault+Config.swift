import Foundation
import VaultCrypto

/// The name and value type of one vault-wide setting in the sealed `config` table.
///
/// ```swift
/// extension VaultConfigKey where Value == Int64 {
///   static var maxBytes: Self { VaultConfigKey("maxBytes") }
/// }
/// let limit = try vault.config(.maxBytes)
/// ```
public struct VaultConfigKey<Value: Codable & Sendable>: Sendable, Hashable {
  /// The row's key: 1 to 64 ASCII letters, digits, `.`, `_` or `-`. It is stored in clear
  /// (it names the setting, not its value) and bound into the value's AAD.
  public let name: String

  /// A key named `name`.
  public init(_ name: String) {
    self.name = name
  }
}

extension VaultConfigKey where Value == CacheKeyRules {
  /// The rules URLs are canonicalised with (``Vault/cacheKeyRules()``).
  public static var cacheKeyRules: VaultConfigKey<CacheKeyRules> {
    VaultConfigKey("cacheKeyRules")
  }
}

extension Vault {
  // MARK: Typed settings

  /// The value stored under `key`, or `nil` if it was never set.
  /// - Throws: ``VaultError/indexDamaged(reason:)`` if the stored value fails authentication
  ///   (changed, or moved from another key) or does not decode;
  ///   ``VaultError/invalidArgument(_:)`` for an invalid key name.
  public func config<Value>(_ key: VaultConfigKey<Value>) throws -> Value? {
    try Self.validateConfigKey(key.name)
    guard let sealed = try index.configValue(key.name) else { return nil }
    return try openConfig(Array(sealed), key: key)
  }

  /// Stores `value` under `key`, sealed; `nil` removes the setting (back to its default).
  /// - Throws: ``VaultError/invalidArgument(_:)`` for an invalid key name, index errors.
  public func setConfig<Value>(_ key: VaultConfigKey<Value>, to value: Value?) throws {
    try Self.validateConfigKey(key.name)
    let sealed = try value.map { Data(try sealConfig($0, key: key)) }
    try index.updateConfigValue(key.name) { _ in sealed }
  }

  /// Reads the setting under `key` (or `defaultValue`), lets `body` change it, and stores
  /// the result, in one index transaction: two processes editing at once lose nothing.
  /// - Returns: the stored value.
  /// - Throws: what `body` throws (nothing is stored then), or as ``config(_:)``.
  @discardableResult
  public func updateConfig<Value>(
    _ key: VaultConfigKey<Value>, default defaultValue: Value, _ body: (inout Value) throws -> Void
  ) throws -> Value {
    try Self.validateConfigKey(key.name)
    var result = defaultValue
    try index.updateConfigValue(key.name) { old in
      var value = try old.map { try openConfig(Array($0), key: key) } ?? defaultValue
      try body(&value)
      result = value
      return Data(try sealConfig(value, key: key))
    }
    return result
  }

  // MARK: Cache-key rules

  /// The vault's cache-key rules, or ``CacheKeyRules/default`` if they were never set.
  /// - Throws: as ``config(_:)``.
  public func cacheKeyRules() throws -> CacheKeyRules {
    try config(.cacheKeyRules) ?? .default
  }

  /// Replaces the vault's cache-key rules (stored sealed).
  /// - Throws: ``VaultError/invalidArgument(_:)`` if ``CacheKeyRules/validate()`` fails.
  public func setCacheKeyRules(_ rules: CacheKeyRules) throws {
    try rules.validate()
    try setConfig(.cacheKeyRules, to: rules)
  }

  /// Edits the vault's cache-key rules in one transaction.
  /// - Returns: the rules now stored.
  /// - Throws: what `body` throws, or ``VaultError/invalidArgument(_:)`` if the result does
  ///   not validate (nothing is stored then).
  @discardableResult
  public func updateCacheKeyRules(_ body: (inout CacheKeyRules) throws -> Void) throws
    -> CacheKeyRules
  {
    try updateConfig(.cacheKeyRules, default: .default) { rules in
      try body(&rules)
      try rules.validate()
    }
  }

  // MARK: URLs to asset ids

  /// The identity and asset id a request maps to under the vault's stored rules: the
  /// explicit `contentID` when given, else the canonical URL (``URLCanonicalizer``). The id
  /// is `HMAC(naming key, "vault v1 asset id" ‖ 0x00 ‖ identity)`; whether it is stored is
  /// ``hasAsset(_:)``.
  /// - Throws: ``VaultError/invalidArgument(_:)`` for a URL that is not http(s) or has no
  ///   host, or an empty content id.
  public func assetID(forURL url: URL, contentID: String? = nil) throws -> (
    identity: AssetIdentity, id: AssetID
  ) {
    try assetID(forURLString: url.absoluteString, contentID: contentID)
  }

  /// ``assetID(forURL:contentID:)`` for a URL given as text (parsed by
  /// ``URLCanonicalizer``, not by Foundation).
  /// - Throws: as ``assetID(forURL:contentID:)``.
  public func assetID(forURLString url: String, contentID: String? = nil) throws -> (
    identity: AssetIdentity, id: AssetID
  ) {
    // A content id overrides the URL completely, so the rules are not even read then.
    let rules = contentID == nil ? try cacheKeyRules() : CacheKeyRules.default
    let identity = try URLCanonicalizer.identity(urlString: url, contentID: contentID, rules: rules)
    return (identity, try assetID(for: identity))
  }

  /// Whether an asset with this id is stored (fully or partly).
  public func hasAsset(_ id: AssetID) throws -> Bool {
    try index.asset(id) != nil
  }

  // MARK: Sealing

  /// Values are padded with spaces (valid trailing JSON whitespace) to a multiple of this,
  /// so a sealed value's length says little about how many hosts or names it lists.
  static let configPadding = 256

  /// `HKDF(NK, salt: "", info: "vault v1 config key", 32)`.
  static func configKey(namingKey: SymmetricKey) throws -> SymmetricKey {
    try cryptoCall {
      try HKDFSHA256.deriveKey(
        inputKeyMaterial: namingKey, salt: [], info: Array(VaultFormat.labelConfigKey.utf8),
        outputByteCount: 32)
    }
  }

  /// `"vault v1 config" ‖ 0x00 ‖ key name`: a value opens only under the key it was stored as.
  static func configAAD(name: String) -> [UInt8] {
    var aad = Array(VaultFormat.labelConfigAAD.utf8)
    aad.append(0)
    aad += Array(name.utf8)
    return aad
  }

  private func sealConfig<Value>(_ value: Value, key: VaultConfigKey<Value>) throws -> [UInt8] {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    var json: [UInt8]
    do {
      json = Array(try encoder.encode(value))
    } catch {
      throw VaultError.invalidArgument("config value \(key.name) cannot be encoded: \(error)")
    }
    defer { SecureMemory.cleanse(&json) }
    let padded = (json.count / Self.configPadding + 1) * Self.configPadding
    json += [UInt8](repeating: UInt8(ascii: " "), count: padded - json.count)
    let configKey = try Self.configKey(namingKey: namingKey)
    return try cryptoCall {
      try ChaChaPoly.seal(json, key: configKey, aad: Self.configAAD(name: key.name))
    }
  }

  private func openConfig<Value>(_ sealed: [UInt8], key: VaultConfigKey<Value>) throws -> Value {
    let configKey = try Self.configKey(namingKey: namingKey)
    var json: [UInt8]
    do {
      json = try ChaChaPoly.open(sealed, key: configKey, aad: Self.configAAD(name: key.name))
    } catch {
      throw VaultError.indexDamaged(
        reason:
          "config value \(key.name) failed authentication (changed, or moved from another key)"
      )
    }
    defer { SecureMemory.cleanse(&json) }
    do {
      return try JSONDecoder().decode(Value.self, from: Data(json))
    } catch {
      throw VaultError.indexDamaged(reason: "config value \(key.name) is malformed")
    }
  }

  private static func validateConfigKey(_ name: String) throws {
    let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".utf8)
    guard (1...64).contains(name.utf8.count), name.utf8.allSatisfy(allowed.contains) else {
      throw VaultError.invalidArgument(
        "config key \"\(name)\" is invalid: use 1 to 64 letters, digits, ., _ or -")
    }
  }
}
