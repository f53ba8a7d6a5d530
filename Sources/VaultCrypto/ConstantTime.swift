/// Comparisons whose running time does not depend on where the inputs differ.
public enum ConstantTime {
  /// Compares two buffers in constant time (`CRYPTO_memcmp`).
  ///
  /// Only the contents are protected: the lengths are compared first and are
  /// assumed not to be secret.
  ///
  /// - Parameters:
  ///   - a: The first buffer.
  ///   - b: The second buffer.
  /// - Returns: `true` if both buffers have the same count and the same bytes;
  ///   `false` otherwise, including when the counts differ.
  public static func equals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    LibCrypto.constantTimeEquals(a, b)
  }

  /// Compares two byte arrays in constant time (`CRYPTO_memcmp`).
  ///
  /// - Parameters:
  ///   - a: The first array.
  ///   - b: The second array.
  /// - Returns: `true` if both arrays have the same count and the same bytes;
  ///   `false` otherwise, including when the counts differ.
  public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.withUnsafeBytes { rawA in
      b.withUnsafeBytes { rawB in LibCrypto.constantTimeEquals(rawA, rawB) }
    }
  }
}
