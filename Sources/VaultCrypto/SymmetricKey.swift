/// A secret key of any length, held in memory that is wiped when released.
///
/// Copies of a `SymmetricKey` share one immutable storage object; the bytes are
/// cleansed with `OPENSSL_cleanse` when the last copy goes away. Equality is
/// decided in constant time (`CRYPTO_memcmp`); the key lengths are not secret.
public struct SymmetricKey: Sendable, Equatable {
  let storage: SecureBytes

  /// Creates a key by copying `bytes` into cleansed storage.
  ///
  /// The caller remains responsible for wiping its own copy of the bytes (for
  /// example with ``SecureMemory/cleanse(_:)-(inout [UInt8])``).
  ///
  /// - Parameter bytes: The key material; any length, including zero.
  public init(bytes: some Collection<UInt8>) {
    storage = SecureBytes(copying: bytes)
  }

  /// Wraps storage that a key-producing operation filled directly.
  init(storage: SecureBytes) {
    self.storage = storage
  }

  /// Generates a key from the cryptographically secure random generator.
  ///
  /// - Parameter byteCount: The key length in bytes; 32 (256 bits) by default.
  /// - Returns: A new random key.
  /// - Throws: ``CryptoError/invalidParameter(_:)`` if `byteCount` is negative,
  ///   ``CryptoError/randomFailed`` if the generator fails.
  public static func random(byteCount: Int = 32) throws -> SymmetricKey {
    guard byteCount >= 0 else {
      throw CryptoError.invalidParameter("key byte count \(byteCount) is negative")
    }
    return SymmetricKey(
      storage: try SecureBytes(count: byteCount) { try LibCrypto.randomBytes($0) })
  }

  /// The key length in bytes.
  public var byteCount: Int { storage.count }

  /// Calls `body` with read-only access to the key bytes.
  ///
  /// - Parameter body: A closure that reads the key; the pointer must not escape it.
  /// - Returns: Whatever `body` returns.
  /// - Throws: Whatever `body` throws.
  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    try storage.withUnsafeBytes(body)
  }

  /// Compares two keys in constant time.
  ///
  /// - Parameters:
  ///   - lhs: A key.
  ///   - rhs: Another key.
  /// - Returns: `true` if both keys have the same length and the same bytes.
  public static func == (lhs: SymmetricKey, rhs: SymmetricKey) -> Bool {
    lhs.storage.withUnsafeBytes { a in
      rhs.storage.withUnsafeBytes { b in LibCrypto.constantTimeEquals(a, b) }
    }
  }
}
