/// HKDF with SHA-256 (RFC 5869), computed by libcrypto.
public enum HKDFSHA256 {
  /// The largest output HKDF-SHA-256 can produce: 255 × 32 bytes.
  public static let maximumOutputByteCount = 255 * 32

  /// Derives a key with HKDF-SHA-256 (extract, then expand).
  ///
  /// - Parameters:
  ///   - inputKeyMaterial: The input keying material (IKM).
  ///   - salt: The optional salt; empty means the RFC default (32 zero bytes).
  ///   - info: Context and application-specific information; may be empty.
  ///   - outputByteCount: The length of the output key, 1 through
  ///     ``maximumOutputByteCount`` bytes.
  /// - Returns: The output keying material (OKM) as a key.
  /// - Throws: ``CryptoError/invalidParameter(_:)`` if `outputByteCount` is out
  ///   of range, ``CryptoError/libcrypto(function:reason:)`` if libcrypto fails.
  public static func deriveKey(
    inputKeyMaterial: SymmetricKey,
    salt: [UInt8],
    info: [UInt8],
    outputByteCount: Int
  ) throws -> SymmetricKey {
    guard (1...maximumOutputByteCount).contains(outputByteCount) else {
      throw CryptoError.invalidParameter(
        "HKDF-SHA-256 output length \(outputByteCount) is outside 1...\(maximumOutputByteCount)")
    }
    let storage = try SecureBytes(count: outputByteCount) { (output) in
      try inputKeyMaterial.storage.withUnsafeBytes { (ikm) in
        try salt.withUnsafeBytes { (saltBytes) in
          try info.withUnsafeBytes { (infoBytes) in
            try LibCrypto.hkdfSHA256(
              inputKeyMaterial: ikm, salt: saltBytes, info: infoBytes, output: output)
          }
        }
      }
    }
    return SymmetricKey(storage: storage)
  }
}
