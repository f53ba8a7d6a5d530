import Testing
import VaultCrypto

/// RFC 4231 §4.2–4.8, HMAC-SHA-256 results.
@Suite struct HMACSHA256Tests {
  private func mac(key: [UInt8], data: [UInt8]) throws -> [UInt8] {
    try HMACSHA256.authenticationCode(for: data, key: SymmetricKey(bytes: key))
  }

  @Test func rfc4231Case1() throws {
    #expect(
      try mac(key: repeated(0x0b, 20), data: utf8("Hi There"))
        == hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"))
  }

  @Test func rfc4231Case2() throws {
    #expect(
      try mac(key: utf8("Jefe"), data: utf8("what do ya want for nothing?"))
        == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
  }

  @Test func rfc4231Case3() throws {
    #expect(
      try mac(key: repeated(0xaa, 20), data: repeated(0xdd, 50))
        == hex("773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"))
  }

  @Test func rfc4231Case4() throws {
    #expect(
      try mac(key: sequence(from: 0x01, count: 25), data: repeated(0xcd, 50))
        == hex("82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"))
  }

  @Test func rfc4231Case5Truncated() throws {
    let code = try mac(key: repeated(0x0c, 20), data: utf8("Test With Truncation"))
    #expect(code.count == 32)
    #expect(Array(code.prefix(16)) == hex("a3b6167473100ee06e0c796c2955552b"))
  }

  @Test func rfc4231Case6() throws {
    #expect(
      try mac(
        key: repeated(0xaa, 131),
        data: utf8("Test Using Larger Than Block-Size Key - Hash Key First"))
        == hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"))
  }

  @Test func rfc4231Case7() throws {
    let data = utf8(
      "This is a test using a larger than block-size key and a larger than block-size data."
        + " The key needs to be hashed before being used by the HMAC algorithm.")
    #expect(
      try mac(key: repeated(0xaa, 131), data: data)
        == hex("9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"))
  }

  @Test func rawBufferOverloadAndEmptyInputs() throws {
    let key = SymmetricKey(bytes: utf8("Jefe"))
    let data = utf8("what do ya want for nothing?")
    let viaBuffer = try data.withUnsafeBytes {
      try HMACSHA256.authenticationCode(for: $0, key: key)
    }
    #expect(viaBuffer == hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
    // HMAC-SHA-256 with an empty key over an empty message (well-known value).
    #expect(
      try HMACSHA256.authenticationCode(for: [], key: SymmetricKey(bytes: []))
        == hex("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"))
  }
}
