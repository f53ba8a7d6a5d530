/// An error thrown by the VaultCrypto primitives.
///
/// Every failure of the underlying library is reported, never swallowed. An
/// AEAD tag that does not verify has its own case, ``authenticationFailed``, so
/// callers can tell "wrong key or tampered data" from an operational failure.
public enum CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The authentication tag did not verify: wrong key, nonce or associated
  /// data, or the ciphertext, tag or sealed box was modified or truncated.
  case authenticationFailed
  /// A key had the wrong length.
  ///
  /// - Parameters:
  ///   - expected: The length in bytes the operation requires.
  ///   - actual: The length in bytes that was supplied.
  case invalidKeySize(expected: Int, actual: Int)
  /// A nonce was not exactly ``ChaChaPoly/nonceByteCount`` bytes long; the
  /// associated value is the supplied length in bytes.
  case invalidNonceSize(Int)
  /// A tag (or tag output buffer) was not exactly ``ChaChaPoly/tagByteCount``
  /// bytes long; the associated value is the supplied length in bytes.
  case invalidTagSize(Int)
  /// A parameter was out of range or inconsistent; the associated value
  /// describes which one.
  case invalidParameter(String)
  /// The random number generator failed to produce bytes.
  case randomFailed
  /// A libcrypto call failed.
  ///
  /// - Parameters:
  ///   - function: The name of the C function that failed.
  ///   - reason: The first error on libcrypto's error queue, as rendered by
  ///     `ERR_error_string_n`, or `"unknown error"` when the queue was empty.
  case libcrypto(function: String, reason: String)

  /// A human-readable description of the error.
  public var description: String {
    switch self {
    case .authenticationFailed:
      return
        "authentication failed: the data was modified or the key, nonce or associated data is wrong"
    case .invalidKeySize(let expected, let actual):
      return "invalid key size: expected \(expected) bytes, got \(actual)"
    case .invalidNonceSize(let count):
      return "invalid nonce size: expected \(ChaChaPoly.nonceByteCount) bytes, got \(count)"
    case .invalidTagSize(let count):
      return "invalid tag size: expected \(ChaChaPoly.tagByteCount) bytes, got \(count)"
    case .invalidParameter(let what):
      return "invalid parameter: \(what)"
    case .randomFailed:
      return "the random number generator failed"
    case .libcrypto(let function, let reason):
      return "libcrypto \(function) failed: \(reason)"
    }
  }
}
