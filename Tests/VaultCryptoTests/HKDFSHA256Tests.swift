import Testing
import VaultCrypto

/// RFC 5869 Appendix A.1–A.3.
@Suite struct HKDFSHA256Tests {
  private func okm(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
    let key = try HKDFSHA256.deriveKey(
      inputKeyMaterial: SymmetricKey(bytes: ikm), salt: salt, info: info, outputByteCount: length)
    return key.withUnsafeBytes { Array($0) }
  }

  @Test func rfc5869Case1() throws {
    let result = try okm(
      ikm: repeated(0x0b, 22), salt: sequence(from: 0x00, count: 13),
      info: sequence(from: 0xf0, count: 10),
      length: 42)
    #expect(
      result
        == hex(
          "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
  }

  @Test func rfc5869Case2() throws {
    let result = try okm(
      ikm: sequence(from: 0x00, count: 80), salt: sequence(from: 0x60, count: 80),
      info: sequence(from: 0xb0, count: 80), length: 82)
    #expect(
      result
        == hex(
          """
          b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c
          59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71
          cc30c58179ec3e87c14c01d5c1f3434f1d87
          """))
  }

  @Test func rfc5869Case3EmptySaltAndInfo() throws {
    let result = try okm(ikm: repeated(0x0b, 22), salt: [], info: [], length: 42)
    #expect(
      result
        == hex(
          "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
  }

  @Test func outputLengthIsValidated() throws {
    let ikm = SymmetricKey(bytes: repeated(0x0b, 22))
    #expect(throws: CryptoError.self) {
      try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, salt: [], info: [], outputByteCount: 0)
    }
    #expect(throws: CryptoError.self) {
      try HKDFSHA256.deriveKey(
        inputKeyMaterial: ikm, salt: [], info: [], outputByteCount: 255 * 32 + 1)
    }
    let longest = try HKDFSHA256.deriveKey(
      inputKeyMaterial: ikm, salt: [], info: [], outputByteCount: 255 * 32)
    #expect(longest.byteCount == 255 * 32)
  }
}
