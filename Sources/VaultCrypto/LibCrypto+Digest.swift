internal import CLibCrypto

extension LibCrypto {
  /// SHA-256 of `data` into `output` (exactly 32 bytes) via `EVP_Digest`.
  static func sha256(_ data: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer)
    throws(CryptoError)
  {
    guard let out = output.baseAddress, output.count == 32 else {
      throw .invalidParameter("SHA-256 output buffer must be 32 bytes")
    }
    try withNonNullBase(data) { (input) throws(CryptoError) in
      var length: UInt32 = 0
      let rc = EVP_Digest(
        input, data.count, out.assumingMemoryBound(to: UInt8.self), &length, EVP_sha256(), nil)
      try check(rc, "EVP_Digest")
      guard length == output.count else {
        throw .libcrypto(function: "EVP_Digest", reason: "unexpected digest length \(length)")
      }
    }
  }

  /// HMAC-SHA-256 of `data` under `key` into `output` (exactly 32 bytes) via `HMAC`.
  static func hmacSHA256(
    key: UnsafeRawBufferPointer,
    data: UnsafeRawBufferPointer,
    output: UnsafeMutableRawBufferPointer
  ) throws(CryptoError) {
    guard let out = output.baseAddress, output.count == 32 else {
      throw .invalidParameter("HMAC-SHA-256 output buffer must be 32 bytes")
    }
    let keyLength = try int32Length(key.count, "HMAC key")
    try withNonNullBase(key) { (keyBase) throws(CryptoError) in
      try withNonNullBase(data) { (dataBase) throws(CryptoError) in
        var length: UInt32 = 0
        let result = HMAC(
          EVP_sha256(), keyBase, keyLength, dataBase, data.count,
          out.assumingMemoryBound(to: UInt8.self), &length)
        guard result != nil else { throw error("HMAC") }
        guard length == output.count else {
          throw .libcrypto(function: "HMAC", reason: "unexpected MAC length \(length)")
        }
      }
    }
  }
}
