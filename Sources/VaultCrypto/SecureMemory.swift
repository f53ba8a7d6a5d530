/// Zeroing of sensitive memory that the optimiser cannot remove.
public enum SecureMemory {
  /// Overwrites every byte of `buffer` with zero using `OPENSSL_cleanse`.
  ///
  /// - Parameter buffer: The memory to wipe. An empty buffer is left alone.
  public static func cleanse(_ buffer: UnsafeMutableRawBufferPointer) {
    LibCrypto.cleanse(buffer)
  }

  /// Overwrites every element of `array` with zero using `OPENSSL_cleanse`.
  ///
  /// The array keeps its count. If its storage is shared with another array
  /// (copy-on-write), Swift makes a private copy first and only that copy is
  /// wiped; hold sensitive bytes in a single, unshared array.
  ///
  /// - Parameter array: The array to wipe in place.
  public static func cleanse(_ array: inout [UInt8]) {
    array.withUnsafeMutableBytes { LibCrypto.cleanse($0) }
  }
}
