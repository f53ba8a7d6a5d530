internal import CLibCrypto

extension LibCrypto {
  /// HKDF-SHA-256 (RFC 5869, extract-then-expand) into `output` via `EVP_PKEY_HKDF`.
  ///
  /// An empty `salt` is not passed on: libcrypto then uses the RFC's default of
  /// 32 zero bytes, which is exactly what an empty salt means. An empty `info`
  /// is likewise skipped.
  static func hkdfSHA256(
    inputKeyMaterial: UnsafeRawBufferPointer,
    salt: UnsafeRawBufferPointer,
    info: UnsafeRawBufferPointer,
    output: UnsafeMutableRawBufferPointer
  ) throws(CryptoError) {
    guard let out = output.baseAddress, output.count > 0 else {
      throw .invalidParameter("HKDF output must not be empty")
    }
    let keyLength = try int32Length(inputKeyMaterial.count, "HKDF input key material")
    let saltLength = try int32Length(salt.count, "HKDF salt")
    let infoLength = try int32Length(info.count, "HKDF info")

    guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else {
      throw error("EVP_PKEY_CTX_new_id")
    }
    defer { EVP_PKEY_CTX_free(context) }

    try check(EVP_PKEY_derive_init(context), "EVP_PKEY_derive_init")
    try check(
      CLibCrypto_EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()), "EVP_PKEY_CTX_set_hkdf_md")
    if let base = salt.baseAddress, saltLength > 0 {
      let rc = CLibCrypto_EVP_PKEY_CTX_set1_hkdf_salt(
        context, base.assumingMemoryBound(to: UInt8.self), saltLength)
      try check(rc, "EVP_PKEY_CTX_set1_hkdf_salt")
    }
    try withNonNullBase(inputKeyMaterial) { (key) throws(CryptoError) in
      try check(
        CLibCrypto_EVP_PKEY_CTX_set1_hkdf_key(context, key, keyLength), "EVP_PKEY_CTX_set1_hkdf_key"
      )
    }
    if let base = info.baseAddress, infoLength > 0 {
      let rc = CLibCrypto_EVP_PKEY_CTX_add1_hkdf_info(
        context, base.assumingMemoryBound(to: UInt8.self), infoLength)
      try check(rc, "EVP_PKEY_CTX_add1_hkdf_info")
    }
    var length = output.count
    try check(
      EVP_PKEY_derive(context, out.assumingMemoryBound(to: UInt8.self), &length), "EVP_PKEY_derive")
    guard length == output.count else {
      throw .libcrypto(
        function: "EVP_PKEY_derive", reason: "derived \(length) bytes, wanted \(output.count)")
    }
  }

  /// scrypt (RFC 7914) into `output` via `EVP_PBE_scrypt`.
  ///
  /// `maxMemory` is the byte budget handed to libcrypto, which refuses
  /// parameters whose working set (`128·r·p + 128·r·(n + 2)` bytes) exceeds it.
  static func scrypt(
    passphrase: UnsafeRawBufferPointer,
    salt: UnsafeRawBufferPointer,
    n: UInt64,
    r: UInt64,
    p: UInt64,
    maxMemory: UInt64,
    output: UnsafeMutableRawBufferPointer
  ) throws(CryptoError) {
    guard let out = output.baseAddress, output.count > 0 else {
      throw .invalidParameter("scrypt output must not be empty")
    }
    try withNonNullBase(passphrase) { (pass) throws(CryptoError) in
      try withNonNullBase(salt) { (saltBase) throws(CryptoError) in
        let rc = UnsafeRawPointer(pass).withMemoryRebound(
          to: CChar.self, capacity: max(passphrase.count, 1)
        ) {
          EVP_PBE_scrypt(
            $0, passphrase.count, saltBase, salt.count, n, r, p, maxMemory,
            out.assumingMemoryBound(to: UInt8.self), output.count)
        }
        try check(rc, "EVP_PBE_scrypt")
      }
    }
  }
}
