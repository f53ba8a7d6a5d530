import Foundation
import Testing
import VaultCrypto

/// RFC 7914 §12.
@Suite struct ScryptTests {
  private func derive(_ passphrase: String, _ salt: String, n: UInt64, r: UInt64, p: UInt64) throws
    -> [UInt8]
  {
    let key = try Scrypt.deriveKey(
      passphrase: utf8(passphrase), salt: utf8(salt), parameters: .init(n: n, r: r, p: p),
      outputByteCount: 64)
    return key.withUnsafeBytes { Array($0) }
  }

  @Test func rfc7914EmptyPassphraseAndSalt() throws {
    #expect(
      try derive("", "", n: 16, r: 1, p: 1)
        == hex(
          """
          77 d6 57 62 38 65 7b 20 3b 19 ca 42 c1 8a 04 97
          f1 6b 48 44 e3 07 4a e8 df df fa 3f ed e2 14 42
          fc d0 06 9d ed 09 48 f8 32 6a 75 3a 0f c8 1f 17
          e8 d3 e0 fb 2e 0d 36 28 cf 35 e2 0c 38 d1 89 06
          """))
  }

  @Test func rfc7914PasswordNaCl() throws {
    #expect(
      try derive("password", "NaCl", n: 1024, r: 8, p: 16)
        == hex(
          """
          fd ba be 1c 9d 34 72 00 78 56 e7 19 0d 01 e9 fe
          7c 6a d7 cb c8 23 78 30 e7 73 76 63 4b 37 31 62
          2e af 30 d9 2e 22 a3 88 6f f1 09 27 9d 98 30 da
          c7 27 af b9 4a 83 ee 6d 83 60 cb df a2 cc 06 40
          """))
  }

  @Test func rfc7914PleaseLetMeIn() throws {
    #expect(
      try derive("pleaseletmein", "SodiumChloride", n: 16384, r: 8, p: 1)
        == hex(
          """
          70 23 bd cb 3a fd 73 48 46 1c 06 cd 81 fd 38 eb
          fd a8 fb ba 90 4f 8e 3e a9 b5 43 f6 54 5d a1 f2
          d5 43 29 55 61 3f 0f cf 62 d4 97 05 24 2a 9a f9
          e6 1e 85 dc 0d 65 1e 40 df cf 01 7b 45 57 58 87
          """))
  }

  @Test func defaultParametersNeedMoreThanLibcryptoDefaultBudget() throws {
    #expect(Scrypt.Parameters.default == Scrypt.Parameters(n: 1 << 17, r: 8, p: 1))
    #expect(Scrypt.Parameters.default.memoryByteCount == 128 << 20)
    // 128 MiB exceeds libcrypto's 32 MiB default maxmem: this only works if maxmem is raised.
    let key = try Scrypt.deriveKey(
      passphrase: utf8("correct horse"), salt: repeated(0x5a, 16), parameters: .default,
      outputByteCount: 32)
    #expect(key.byteCount == 32)
    let again = try Scrypt.deriveKey(
      passphrase: utf8("correct horse"), salt: repeated(0x5a, 16), parameters: .default,
      outputByteCount: 32)
    #expect(key == again)
  }

  @Test func invalidParametersAreRejected() {
    for bad in [
      Scrypt.Parameters(n: 0, r: 8, p: 1), Scrypt.Parameters(n: 1, r: 8, p: 1),
      Scrypt.Parameters(n: 1000, r: 8, p: 1), Scrypt.Parameters(n: 1024, r: 0, p: 1),
      Scrypt.Parameters(n: 1024, r: 8, p: 0),
    ] {
      #expect(throws: CryptoError.self) {
        try Scrypt.deriveKey(passphrase: [1], salt: [2], parameters: bad, outputByteCount: 32)
      }
    }
    #expect(throws: CryptoError.self) {
      try Scrypt.deriveKey(
        passphrase: [1], salt: [2], parameters: .init(n: 16, r: 1, p: 1), outputByteCount: 0)
    }
  }

  /// RFC 7914 requires N < 2^(128·r/8); libcrypto enforces it, and its reason
  /// string must come through in the error.
  @Test func libcryptoRefusalIsReportedWithItsReason() {
    do {
      _ = try Scrypt.deriveKey(
        passphrase: [1], salt: [2], parameters: .init(n: 1 << 16, r: 1, p: 1), outputByteCount: 32)
      Issue.record("expected libcrypto to refuse N = 2^16 with r = 1")
    } catch let error as CryptoError {
      guard case .libcrypto(let function, let reason) = error else {
        Issue.record("unexpected error \(error)")
        return
      }
      #expect(function == "EVP_PBE_scrypt")
      #expect(reason.contains("memory limit exceeded"), "reason: \(reason)")
    } catch {
      Issue.record("unexpected error \(error)")
    }
  }

  @Test func parametersRoundTripThroughCodable() throws {
    let parameters = Scrypt.Parameters(n: 1 << 15, r: 8, p: 2)
    let data = try JSONEncoder().encode(parameters)
    #expect(try JSONDecoder().decode(Scrypt.Parameters.self, from: data) == parameters)
  }
}
