internal import CLibCrypto

/// Owns one `EVP_CIPHER_CTX` keyed for ChaCha20-Poly1305 in one direction.
///
/// The key schedule is installed once, in `init`; each ``seal`` or ``open``
/// re-initialises the context with a NULL cipher and NULL key and only the new
/// nonce, which resets the Poly1305 state and the AAD/text lengths without
/// re-running the key setup or allocating. Not thread-safe: one per owner.
///
/// Callers (the façade) have already validated sizes: the nonce is 12 bytes,
/// the tag 16, the output as long as the input, the key 32.
final class ChaChaPolyCipher {
  private let context: OpaquePointer
  /// `true` for a sealing (encrypting) context, `false` for an opening one.
  let encrypting: Bool

  /// Creates the context and installs `key` (32 bytes) for `encrypting`.
  init(key: UnsafeRawBufferPointer, encrypting: Bool) throws(CryptoError) {
    guard let keyBase = key.baseAddress, key.count == 32 else {
      throw .invalidKeySize(expected: 32, actual: key.count)
    }
    guard let context = EVP_CIPHER_CTX_new() else { throw LibCrypto.error("EVP_CIPHER_CTX_new") }
    let keyPointer = keyBase.assumingMemoryBound(to: UInt8.self)
    let rc =
      encrypting
      ? EVP_EncryptInit_ex(context, EVP_chacha20_poly1305(), nil, keyPointer, nil)
      : EVP_DecryptInit_ex(context, EVP_chacha20_poly1305(), nil, keyPointer, nil)
    guard rc == 1 else {
      let error = LibCrypto.error(encrypting ? "EVP_EncryptInit_ex" : "EVP_DecryptInit_ex")
      EVP_CIPHER_CTX_free(context)
      throw error
    }
    self.context = context
    self.encrypting = encrypting
  }

  deinit {
    // EVP_CIPHER_CTX_free cleanses the key schedule before freeing it.
    EVP_CIPHER_CTX_free(context)
  }

  /// Encrypts `plaintext` into `ciphertext` and writes the 16-byte tag.
  func seal(
    nonce: UnsafeRawBufferPointer,
    aad: UnsafeRawBufferPointer,
    plaintext: UnsafeRawBufferPointer,
    ciphertext: UnsafeMutableRawBufferPointer,
    tag: UnsafeMutableRawBufferPointer
  ) throws(CryptoError) {
    guard encrypting, let nonceBase = nonce.baseAddress, let tagBase = tag.baseAddress else {
      throw .invalidParameter("sealing needs an encrypting context, a nonce and a tag buffer")
    }
    try LibCrypto.check(
      EVP_EncryptInit_ex(context, nil, nil, nil, nonceBase.assumingMemoryBound(to: UInt8.self)),
      "EVP_EncryptInit_ex")
    try update(output: nil, input: aad)
    try update(output: ciphertext.baseAddress, input: plaintext)
    try finish()
    try LibCrypto.check(
      EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, 16, tagBase),
      "EVP_CIPHER_CTX_ctrl(EVP_CTRL_AEAD_GET_TAG)")
  }

  /// Decrypts `ciphertext` into `plaintext` and verifies the tag.
  ///
  /// Throws ``CryptoError/authenticationFailed`` if the tag does not verify.
  /// The plaintext buffer holds unverified bytes when this throws: the façade
  /// cleanses it.
  func open(
    nonce: UnsafeRawBufferPointer,
    aad: UnsafeRawBufferPointer,
    ciphertext: UnsafeRawBufferPointer,
    tag: UnsafeRawBufferPointer,
    plaintext: UnsafeMutableRawBufferPointer
  ) throws(CryptoError) {
    guard !encrypting, let nonceBase = nonce.baseAddress, let tagBase = tag.baseAddress else {
      throw .invalidParameter("opening needs a decrypting context, a nonce and a tag")
    }
    try LibCrypto.check(
      EVP_DecryptInit_ex(context, nil, nil, nil, nonceBase.assumingMemoryBound(to: UInt8.self)),
      "EVP_DecryptInit_ex")
    // EVP_CTRL_AEAD_SET_TAG only copies from the pointer; its C parameter is
    // merely not const-qualified.
    try LibCrypto.check(
      EVP_CIPHER_CTX_ctrl(
        context, EVP_CTRL_AEAD_SET_TAG, 16, UnsafeMutableRawPointer(mutating: tagBase)),
      "EVP_CIPHER_CTX_ctrl(EVP_CTRL_AEAD_SET_TAG)")
    try update(output: nil, input: aad)
    try update(output: plaintext.baseAddress, input: ciphertext)
    do {
      try finish()
    } catch {
      throw .authenticationFailed
    }
  }

  /// Feeds `input` through the cipher (AAD when `output` is nil), in pieces
  /// that fit libcrypto's `int` lengths.
  private func update(output: UnsafeMutableRawPointer?, input: UnsafeRawBufferPointer)
    throws(CryptoError)
  {
    guard let inputBase = input.baseAddress, input.count > 0 else { return }
    var offset = 0
    while offset < input.count {
      let length = min(input.count - offset, 1 << 30)
      let source = inputBase.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
      let destination = output.map { $0.advanced(by: offset).assumingMemoryBound(to: UInt8.self) }
      var written: Int32 = 0
      let rc =
        encrypting
        ? EVP_EncryptUpdate(context, destination, &written, source, Int32(length))
        : EVP_DecryptUpdate(context, destination, &written, source, Int32(length))
      try LibCrypto.check(rc, encrypting ? "EVP_EncryptUpdate" : "EVP_DecryptUpdate")
      guard written == length else {
        throw .libcrypto(
          function: encrypting ? "EVP_EncryptUpdate" : "EVP_DecryptUpdate",
          reason: "processed \(written) of \(length) bytes")
      }
      offset += length
    }
  }

  /// Finalises the operation: computes the tag (seal) or verifies it (open).
  /// A stream cipher emits no bytes here; a small stack scratch buffer is
  /// passed only because libcrypto wants a non-NULL output pointer.
  private func finish() throws(CryptoError) {
    var written: Int32 = 0
    let rc = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { scratch in
      encrypting
        ? EVP_EncryptFinal_ex(context, scratch.baseAddress, &written)
        : EVP_DecryptFinal_ex(context, scratch.baseAddress, &written)
    }
    guard rc == 1 else {
      throw LibCrypto.error(encrypting ? "EVP_EncryptFinal_ex" : "EVP_DecryptFinal_ex")
    }
    guard written == 0 else {
      throw .libcrypto(
        function: "EVP_CipherFinal_ex", reason: "unexpected \(written) trailing bytes")
    }
  }
}
