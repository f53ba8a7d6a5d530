extension ChaChaPoly {
  /// A reusable cipher context bound to one key; not thread-safe (not Sendable): one per reader/writer/worker.
  ///
  /// The key schedule is set up once, in `init`, in two libcrypto contexts (one
  /// for sealing, one for opening), so a context may freely alternate between
  /// ``seal(plaintext:nonce:aad:ciphertext:tag:)`` and
  /// ``open(ciphertext:tag:nonce:aad:plaintext:)``. Each call only installs
  /// the new nonce and performs no heap allocation. In-place operation (input
  /// and output being the same memory) is supported; partial overlap is not.
  public final class Context {
    private let sealer: ChaChaPolyCipher
    private let opener: ChaChaPolyCipher

    /// Creates a context for `key`.
    ///
    /// - Parameter key: A 32-byte key.
    /// - Throws: ``CryptoError/invalidKeySize(expected:actual:)`` if the key is
    ///   not 32 bytes, ``CryptoError/libcrypto(function:reason:)`` if libcrypto
    ///   cannot create or key a cipher context.
    public init(key: SymmetricKey) throws {
      sealer = try ChaChaPoly.makeCipher(key: key, encrypting: true)
      opener = try ChaChaPoly.makeCipher(key: key, encrypting: false)
    }

    /// Encrypts `plaintext` into `ciphertext` (same count) and writes the tag into `tag` (16 bytes). nonce exactly 12 bytes.
    ///
    /// Never use a nonce twice with the same key.
    ///
    /// - Parameters:
    ///   - plaintext: The bytes to encrypt; may be empty.
    ///   - nonce: Exactly 12 bytes, unique for this key.
    ///   - aad: Associated data authenticated but not encrypted; may be empty.
    ///   - ciphertext: Receives the ciphertext; exactly `plaintext.count` bytes.
    ///     May be the same memory as `plaintext`.
    ///   - tag: Receives the authentication tag; exactly 16 bytes.
    /// - Throws: ``CryptoError/invalidNonceSize(_:)``, ``CryptoError/invalidTagSize(_:)``,
    ///   ``CryptoError/invalidParameter(_:)`` if the buffer sizes disagree, or
    ///   ``CryptoError/libcrypto(function:reason:)``.
    public func seal(
      plaintext: UnsafeRawBufferPointer,
      nonce: UnsafeRawBufferPointer,
      aad: UnsafeRawBufferPointer,
      ciphertext: UnsafeMutableRawBufferPointer,
      tag: UnsafeMutableRawBufferPointer
    ) throws {
      try ChaChaPoly.seal(
        cipher: sealer, plaintext: plaintext, nonce: nonce, aad: aad, ciphertext: ciphertext,
        tag: tag)
    }

    /// Verifies the tag and decrypts into `plaintext` (same count as ciphertext). On any failure the plaintext
    /// buffer is cleansed before throwing (.authenticationFailed for a bad tag), so no unverified byte escapes.
    ///
    /// - Parameters:
    ///   - ciphertext: The bytes to decrypt; may be empty.
    ///   - tag: The authentication tag; exactly 16 bytes.
    ///   - nonce: The 12-byte nonce used to seal.
    ///   - aad: The associated data used to seal.
    ///   - plaintext: Receives the plaintext; exactly `ciphertext.count` bytes.
    ///     May be the same memory as `ciphertext`.
    /// - Throws: ``CryptoError/authenticationFailed`` if the tag does not verify;
    ///   ``CryptoError/invalidNonceSize(_:)``, ``CryptoError/invalidTagSize(_:)``,
    ///   ``CryptoError/invalidParameter(_:)`` for bad sizes; or
    ///   ``CryptoError/libcrypto(function:reason:)``.
    public func open(
      ciphertext: UnsafeRawBufferPointer,
      tag: UnsafeRawBufferPointer,
      nonce: UnsafeRawBufferPointer,
      aad: UnsafeRawBufferPointer,
      plaintext: UnsafeMutableRawBufferPointer
    ) throws {
      try ChaChaPoly.open(
        cipher: opener, ciphertext: ciphertext, tag: tag, nonce: nonce, aad: aad,
        plaintext: plaintext)
    }
  }
}

/// A context wraps mutable libcrypto state and must not be shared across
/// concurrency domains; give each task its own.
@available(*, unavailable)
extension ChaChaPoly.Context: Sendable {}
