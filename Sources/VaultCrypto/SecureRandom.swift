/// Cryptographically secure random bytes from libcrypto (`RAND_bytes`).
public enum SecureRandom {
  /// Returns `count` fresh random bytes.
  ///
  /// - Parameter count: The number of bytes to produce; must not be negative.
  /// - Returns: An array of `count` random bytes.
  /// - Throws: ``CryptoError/invalidParameter(_:)`` if `count` is negative,
  ///   ``CryptoError/randomFailed`` if the generator fails.
  public static func bytes(count: Int) throws -> [UInt8] {
    guard count >= 0 else {
      throw CryptoError.invalidParameter("random byte count \(count) is negative")
    }
    var bytes = [UInt8](repeating: 0, count: count)
    try bytes.withUnsafeMutableBytes { try LibCrypto.randomBytes($0) }
    return bytes
  }

  /// Fills `buffer` with random bytes.
  ///
  /// - Parameter buffer: The memory to overwrite; an empty buffer is left alone.
  /// - Throws: ``CryptoError/randomFailed`` if the generator fails.
  public static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
    try LibCrypto.randomBytes(buffer)
  }
}
