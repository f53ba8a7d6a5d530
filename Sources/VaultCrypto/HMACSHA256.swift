/// HMAC-SHA-256 (RFC 2104 / FIPS 198-1) via libcrypto.
public enum HMACSHA256 {
  /// The authentication code length in bytes.
  public static let byteCount = 32

  /// Computes the HMAC-SHA-256 of the bytes in `data`.
  ///
  /// Compare codes with ``ConstantTime/equals(_:_:)-([UInt8],[UInt8])``, never with `==`.
  ///
  /// - Parameters:
  ///   - data: The message; may be empty.
  ///   - key: The MAC key; any length (keys longer than 64 bytes are hashed first, per RFC 2104).
  /// - Returns: The 32-byte authentication code.
  /// - Throws: ``CryptoError/libcrypto(function:reason:)`` if libcrypto fails,
  ///   ``CryptoError/invalidParameter(_:)`` if the key is longer than `Int32.max` bytes.
  public static func authenticationCode(for data: UnsafeRawBufferPointer, key: SymmetricKey) throws
    -> [UInt8]
  {
    var code = [UInt8](repeating: 0, count: byteCount)
    try code.withUnsafeMutableBytes { output in
      try key.storage.withUnsafeBytes { (keyBytes) throws(CryptoError) in
        try LibCrypto.hmacSHA256(key: keyBytes, data: data, output: output)
      }
    }
    return code
  }

  /// Computes the HMAC-SHA-256 of `data`.
  ///
  /// - Parameters:
  ///   - data: The message; may be empty.
  ///   - key: The MAC key; any length.
  /// - Returns: The 32-byte authentication code.
  /// - Throws: ``CryptoError/libcrypto(function:reason:)`` if libcrypto fails.
  public static func authenticationCode(for data: [UInt8], key: SymmetricKey) throws -> [UInt8] {
    try data.withUnsafeBytes { try authenticationCode(for: $0, key: key) }
  }
}
