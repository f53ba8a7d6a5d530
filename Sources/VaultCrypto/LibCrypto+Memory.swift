internal import CLibCrypto

extension LibCrypto {
  /// Overwrites `buffer` with zeros in a way the optimiser cannot elide
  /// (`OPENSSL_cleanse`).
  static func cleanse(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    OPENSSL_cleanse(base, buffer.count)
  }

  /// Compares two equally long buffers in time that depends only on their
  /// length (`CRYPTO_memcmp`). Returns `false` when the lengths differ.
  static func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard a.count > 0, let baseA = a.baseAddress, let baseB = b.baseAddress else { return true }
    return CRYPTO_memcmp(baseA, baseB, a.count) == 0
  }
}
