/// ChaCha20-Poly1305 authenticated encryption (RFC 8439), computed by libcrypto.
///
/// Use a ``Context`` for bulk data (one per reader, writer or worker, reused
/// for every chunk), and the static functions for small messages such as
/// wrapped keys and metadata.
public enum ChaChaPoly {
  /// The key length in bytes.
  public static let keyByteCount = 32
  /// The nonce length in bytes.
  public static let nonceByteCount = 12
  /// The authentication tag length in bytes.
  public static let tagByteCount = 16
  /// The fixed overhead of the combined layout: nonce plus tag (28 bytes).
  public static let combinedOverheadByteCount = nonceByteCount + tagByteCount

  /// Seals a small message under a fresh random nonce.
  ///
  /// - Parameters:
  ///   - plaintext: The message to encrypt.
  ///   - key: A 32-byte key.
  ///   - aad: Associated data authenticated but not encrypted; may be empty.
  /// - Returns: The combined layout `nonce(12) ‖ ciphertext ‖ tag(16)`.
  /// - Throws: ``CryptoError/invalidKeySize(expected:actual:)``,
  ///   ``CryptoError/randomFailed``, or ``CryptoError/libcrypto(function:reason:)``.
  public static func seal(_ plaintext: [UInt8], key: SymmetricKey, aad: [UInt8]) throws -> [UInt8] {
    let nonce = try SecureRandom.bytes(count: nonceByteCount)
    return try seal(plaintext, key: key, nonce: nonce, aad: aad)
  }

  /// Seals a small message under a caller-chosen nonce.
  ///
  /// Never reuse a nonce with the same key: doing so reveals the XOR of the two
  /// plaintexts and allows forgeries.
  ///
  /// - Parameters:
  ///   - plaintext: The message to encrypt.
  ///   - key: A 32-byte key.
  ///   - nonce: Exactly 12 bytes, unique for this key.
  ///   - aad: Associated data authenticated but not encrypted; may be empty.
  /// - Returns: The combined layout `nonce(12) ‖ ciphertext ‖ tag(16)`.
  /// - Throws: ``CryptoError/invalidKeySize(expected:actual:)``,
  ///   ``CryptoError/invalidNonceSize(_:)``, or ``CryptoError/libcrypto(function:reason:)``.
  public static func seal(_ plaintext: [UInt8], key: SymmetricKey, nonce: [UInt8], aad: [UInt8])
    throws -> [UInt8]
  {
    try plaintext.withUnsafeBytes { try sealCombined($0, key: key, nonce: nonce, aad: aad) }
  }

  /// Opens a combined `nonce(12) ‖ ciphertext ‖ tag(16)` message.
  ///
  /// - Parameters:
  ///   - combined: The sealed message.
  ///   - key: The 32-byte key it was sealed with.
  ///   - aad: The associated data it was sealed with.
  /// - Returns: The plaintext, only once the tag has verified.
  /// - Throws: ``CryptoError/authenticationFailed`` if the tag does not verify
  ///   **or if `combined` is shorter than 28 bytes** (a truncated message is
  ///   treated like any other tampered one); ``CryptoError/invalidKeySize(expected:actual:)``;
  ///   ``CryptoError/libcrypto(function:reason:)``.
  public static func open(_ combined: [UInt8], key: SymmetricKey, aad: [UInt8]) throws -> [UInt8] {
    guard combined.count >= combinedOverheadByteCount else {
      throw CryptoError.authenticationFailed
    }
    var plaintext = [UInt8](repeating: 0, count: combined.count - combinedOverheadByteCount)
    try plaintext.withUnsafeMutableBytes { output in
      try openCombined(combined, key: key, aad: aad, into: output)
    }
    return plaintext
  }

  /// Wraps (encrypts) a key under another key with a fresh random nonce.
  ///
  /// - Parameters:
  ///   - keyToWrap: The key to protect; any length.
  ///   - key: The 32-byte wrapping key.
  ///   - aad: Associated data bound to the wrapped key (for example its purpose and id).
  /// - Returns: The combined layout `nonce(12) ‖ wrapped key ‖ tag(16)`.
  /// - Throws: ``CryptoError/invalidKeySize(expected:actual:)``,
  ///   ``CryptoError/randomFailed``, or ``CryptoError/libcrypto(function:reason:)``.
  public static func sealKey(_ keyToWrap: SymmetricKey, key: SymmetricKey, aad: [UInt8]) throws
    -> [UInt8]
  {
    let nonce = try SecureRandom.bytes(count: nonceByteCount)
    return try keyToWrap.storage.withUnsafeBytes {
      try sealCombined($0, key: key, nonce: nonce, aad: aad)
    }
  }

  /// Unwraps a key sealed by ``sealKey(_:key:aad:)``.
  ///
  /// The key is decrypted straight into cleansed key storage; it never passes
  /// through a plain `[UInt8]`.
  ///
  /// - Parameters:
  ///   - combined: The wrapped key.
  ///   - key: The 32-byte wrapping key.
  ///   - aad: The associated data it was wrapped with.
  /// - Returns: The unwrapped key.
  /// - Throws: ``CryptoError/authenticationFailed`` if the tag does not verify
  ///   or `combined` is shorter than 28 bytes; ``CryptoError/invalidKeySize(expected:actual:)``;
  ///   ``CryptoError/libcrypto(function:reason:)``.
  public static func openKey(_ combined: [UInt8], key: SymmetricKey, aad: [UInt8]) throws
    -> SymmetricKey
  {
    guard combined.count >= combinedOverheadByteCount else {
      throw CryptoError.authenticationFailed
    }
    let storage = try SecureBytes(count: combined.count - combinedOverheadByteCount) { output in
      try openCombined(combined, key: key, aad: aad, into: output)
    }
    return SymmetricKey(storage: storage)
  }

  // MARK: - Shared internals

  /// Checks that `key` is a ChaCha20-Poly1305 key.
  static func validateKey(_ key: SymmetricKey) throws(CryptoError) {
    guard key.byteCount == keyByteCount else {
      throw .invalidKeySize(expected: keyByteCount, actual: key.byteCount)
    }
  }

  /// Creates a one-direction cipher for `key`.
  static func makeCipher(key: SymmetricKey, encrypting: Bool) throws(CryptoError)
    -> ChaChaPolyCipher
  {
    try validateKey(key)
    return try key.storage.withUnsafeBytes { (bytes) throws(CryptoError) in
      try ChaChaPolyCipher(key: bytes, encrypting: encrypting)
    }
  }

  /// Validated seal: every size check happens here, before libcrypto is called.
  static func seal(
    cipher: ChaChaPolyCipher,
    plaintext: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer,
    aad: UnsafeRawBufferPointer,
    ciphertext: UnsafeMutableRawBufferPointer,
    tag: UnsafeMutableRawBufferPointer
  ) throws(CryptoError) {
    guard nonce.count == nonceByteCount else { throw .invalidNonceSize(nonce.count) }
    guard tag.count == tagByteCount else { throw .invalidTagSize(tag.count) }
    guard ciphertext.count == plaintext.count else {
      throw .invalidParameter(
        "ciphertext buffer holds \(ciphertext.count) bytes, plaintext has \(plaintext.count)")
    }
    try cipher.seal(nonce: nonce, aad: aad, plaintext: plaintext, ciphertext: ciphertext, tag: tag)
  }

  /// Validated open: size checks first; on any failure the plaintext buffer is
  /// cleansed before the error propagates.
  static func open(
    cipher: ChaChaPolyCipher,
    ciphertext: UnsafeRawBufferPointer,
    tag: UnsafeRawBufferPointer,
    nonce: UnsafeRawBufferPointer,
    aad: UnsafeRawBufferPointer,
    plaintext: UnsafeMutableRawBufferPointer
  ) throws(CryptoError) {
    do throws(CryptoError) {
      guard nonce.count == nonceByteCount else { throw CryptoError.invalidNonceSize(nonce.count) }
      guard tag.count == tagByteCount else { throw CryptoError.invalidTagSize(tag.count) }
      guard plaintext.count == ciphertext.count else {
        throw CryptoError.invalidParameter(
          "plaintext buffer holds \(plaintext.count) bytes, ciphertext has \(ciphertext.count)")
      }
      try cipher.open(
        nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag, plaintext: plaintext)
    } catch {
      LibCrypto.cleanse(plaintext)
      throw error
    }
  }

  /// Seals into a fresh combined `nonce ‖ ciphertext ‖ tag` array.
  private static func sealCombined(
    _ plaintext: UnsafeRawBufferPointer,
    key: SymmetricKey,
    nonce: [UInt8],
    aad: [UInt8]
  ) throws -> [UInt8] {
    guard nonce.count == nonceByteCount else { throw CryptoError.invalidNonceSize(nonce.count) }
    let cipher = try makeCipher(key: key, encrypting: true)
    var combined = [UInt8](repeating: 0, count: plaintext.count + combinedOverheadByteCount)
    try combined.withUnsafeMutableBytes { (output) in
      let ciphertextEnd = nonceByteCount + plaintext.count
      try nonce.withUnsafeBytes { (nonceBytes) in
        UnsafeMutableRawBufferPointer(rebasing: output[..<nonceByteCount]).copyMemory(
          from: nonceBytes)
        try aad.withUnsafeBytes { (aadBytes) in
          try seal(
            cipher: cipher, plaintext: plaintext, nonce: nonceBytes, aad: aadBytes,
            ciphertext: UnsafeMutableRawBufferPointer(
              rebasing: output[nonceByteCount..<ciphertextEnd]),
            tag: UnsafeMutableRawBufferPointer(rebasing: output[ciphertextEnd...]))
        }
      }
    }
    return combined
  }

  /// Opens a combined message (already checked to be at least 28 bytes) into `output`.
  private static func openCombined(
    _ combined: [UInt8],
    key: SymmetricKey,
    aad: [UInt8],
    into output: UnsafeMutableRawBufferPointer
  ) throws {
    do {
      let cipher = try makeCipher(key: key, encrypting: false)
      try combined.withUnsafeBytes { (input) in
        let tagStart = input.count - tagByteCount
        try aad.withUnsafeBytes { (aadBytes) in
          try open(
            cipher: cipher,
            ciphertext: UnsafeRawBufferPointer(rebasing: input[nonceByteCount..<tagStart]),
            tag: UnsafeRawBufferPointer(rebasing: input[tagStart...]),
            nonce: UnsafeRawBufferPointer(rebasing: input[..<nonceByteCount]),
            aad: aadBytes,
            plaintext: output)
        }
      }
    } catch {
      LibCrypto.cleanse(output)
      throw error
    }
  }
}
