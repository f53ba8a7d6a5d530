/// SHA-256 (FIPS 180-4) via libcrypto.
public enum SHA256 {
  /// The digest length in bytes.
  public static let byteCount = 32

  /// Hashes the bytes in `data`.
  ///
  /// - Parameter data: The message; may be empty.
  /// - Returns: The 32-byte digest.
  /// - Throws: ``CryptoError/libcrypto(function:reason:)`` if libcrypto fails.
  public static func hash(_ data: UnsafeRawBufferPointer) throws -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: byteCount)
    try digest.withUnsafeMutableBytes { try LibCrypto.sha256(data, output: $0) }
    return digest
  }

  /// Hashes `data`.
  ///
  /// - Parameter data: The message; may be empty.
  /// - Returns: The 32-byte digest.
  /// - Throws: ``CryptoError/libcrypto(function:reason:)`` if libcrypto fails.
  public static func hash(_ data: [UInt8]) throws -> [UInt8] {
    try data.withUnsafeBytes { try hash($0) }
  }
}
