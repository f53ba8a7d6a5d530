import VaultCrypto

/// The vault's key-encryption key: 256 bits that wrap the naming key and every asset's data
/// key. It never touches a chunk directly, so rotating it rewraps small keys only.
///
/// The key id is public: the first 8 bytes of `HKDF(key, salt: "", info: "vault v1 key id")`,
/// as 16 hex digits. It names the key in key files and in the index without revealing it.
public struct MasterKey: Sendable {
  /// The raw 32-byte key.
  public let key: SymmetricKey
  /// The public key id (16 lower-case hex digits).
  public let keyID: String

  /// Wraps existing key bytes.
  /// - Parameter key: 32 random bytes.
  /// - Throws: ``VaultError/invalidArgument(_:)`` if the key is not 32 bytes.
  public init(key: SymmetricKey) throws {
    guard key.byteCount == 32 else {
      throw VaultError.invalidArgument("a master key must be 32 bytes, got \(key.byteCount)")
    }
    self.key = key
    self.keyID = try Self.deriveKeyID(key)
  }

  /// Makes a new random master key from the system's CSPRNG.
  /// - Throws: ``VaultError/crypto(_:)`` if the random generator fails.
  public static func generate() throws -> MasterKey {
    try cryptoCall { try MasterKey(key: SymmetricKey.random(byteCount: 32)) }
  }

  private static func deriveKeyID(_ key: SymmetricKey) throws -> String {
    let derived = try cryptoCall {
      try HKDFSHA256.deriveKey(
        inputKeyMaterial: key, salt: [], info: Array(VaultFormat.labelKeyID.utf8),
        outputByteCount: 8)
    }
    return derived.withUnsafeBytes { Bytes.hex($0) }
  }

  /// The key that wraps naming and data keys in the vault identified by `vaultID`.
  func wrappingKey(vaultID: [UInt8]) throws -> SymmetricKey {
    try cryptoCall {
      try HKDFSHA256.deriveKey(
        inputKeyMaterial: key, salt: vaultID, info: Array(VaultFormat.labelWrap.utf8),
        outputByteCount: 32)
    }
  }

  /// The key commitment stored in the index: checked before any AEAD open, so a wrong key
  /// is reported as a wrong key, never as corruption.
  func commitment(vaultID: [UInt8]) throws -> [UInt8] {
    try cryptoCall {
      let commitKey = try HKDFSHA256.deriveKey(
        inputKeyMaterial: key, salt: vaultID, info: Array(VaultFormat.labelCommit.utf8),
        outputByteCount: 32)
      return try HMACSHA256.authenticationCode(
        for: Array(VaultFormat.commitMessage.utf8), key: commitKey)
    }
  }
}

/// Runs a VaultCrypto call and maps its errors into ``VaultError``.
func cryptoCall<T>(_ body: () throws -> T) throws -> T {
  do {
    return try body()
  } catch let error as VaultError {
    throw error
  } catch {
    throw VaultError.crypto("\(error)")
  }
}
