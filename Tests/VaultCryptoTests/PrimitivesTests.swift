import Testing
import VaultCrypto

@Suite struct SecureRandomTests {
  @Test func bytesAreFreshEachCall() throws {
    let a = try SecureRandom.bytes(count: 32)
    let b = try SecureRandom.bytes(count: 32)
    #expect(a.count == 32)
    #expect(b.count == 32)
    #expect(a != b)
    #expect(a != [UInt8](repeating: 0, count: 32))
    #expect(try SecureRandom.bytes(count: 0) == [])
  }

  @Test func fillOverwritesTheWholeBuffer() throws {
    var buffer = [UInt8](repeating: 0, count: 4096)
    try buffer.withUnsafeMutableBytes { try SecureRandom.fill($0) }
    // 4096 random bytes containing fewer than 3000 non-zero bytes has negligible probability.
    #expect(buffer.filter { $0 != 0 }.count > 3000)
    try SecureRandom.fill(UnsafeMutableRawBufferPointer(start: nil, count: 0))
  }

  @Test func negativeCountIsRejected() {
    #expect(throws: CryptoError.self) { try SecureRandom.bytes(count: -1) }
  }
}

@Suite struct ConstantTimeTests {
  @Test func arrays() {
    #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
    #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
    #expect(!ConstantTime.equals([0x80, 2, 3], [0, 2, 3]))
    #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
    #expect(!ConstantTime.equals([], [0]))
    #expect(ConstantTime.equals([], []))
  }

  @Test func rawBuffers() {
    let a: [UInt8] = [9, 8, 7, 6]
    let b: [UInt8] = [9, 8, 7, 6]
    let c: [UInt8] = [9, 8, 7, 5]
    a.withUnsafeBytes { ra in
      b.withUnsafeBytes { rb in #expect(ConstantTime.equals(ra, rb)) }
      c.withUnsafeBytes { rc in #expect(!ConstantTime.equals(ra, rc)) }
      #expect(!ConstantTime.equals(ra, UnsafeRawBufferPointer(rebasing: ra[0..<3])))
    }
    #expect(
      ConstantTime.equals(
        UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(start: nil, count: 0)))
  }
}

@Suite struct SecureMemoryTests {
  @Test func cleanseZeroesArraysAndBuffers() {
    var secret: [UInt8] = [1, 2, 3, 4, 5]
    SecureMemory.cleanse(&secret)
    #expect(secret == [0, 0, 0, 0, 0])
    var other: [UInt8] = [0xff, 0xfe]
    other.withUnsafeMutableBytes { SecureMemory.cleanse($0) }
    #expect(other == [0, 0])
    SecureMemory.cleanse(UnsafeMutableRawBufferPointer(start: nil, count: 0))
  }
}

@Suite struct SymmetricKeyTests {
  @Test func equalitySemantics() throws {
    let a = SymmetricKey(bytes: [1, 2, 3, 4])
    #expect(a == SymmetricKey(bytes: [1, 2, 3, 4]))
    #expect(a == SymmetricKey(bytes: [1, 2, 3, 4][...]))
    #expect(a != SymmetricKey(bytes: [1, 2, 3, 5]))
    #expect(a != SymmetricKey(bytes: [1, 2, 3]))
    #expect(a != SymmetricKey(bytes: [1, 2, 3, 4, 0]))
    let copy = a
    #expect(copy == a)
    #expect(try SymmetricKey.random() != SymmetricKey.random())
  }

  @Test func storesExactlyTheGivenBytes() {
    // A non-contiguous collection takes the element-by-element path.
    let key = SymmetricKey(bytes: (0..<32).lazy.map { UInt8($0) * 3 })
    #expect(key.byteCount == 32)
    #expect(key.withUnsafeBytes { Array($0) } == (0..<32).map { UInt8($0) * 3 })
    let empty = SymmetricKey(bytes: [UInt8]())
    #expect(empty.byteCount == 0)
  }

  @Test func randomKeys() throws {
    #expect(try SymmetricKey.random().byteCount == 32)
    #expect(try SymmetricKey.random(byteCount: 64).byteCount == 64)
    #expect(throws: CryptoError.self) { try SymmetricKey.random(byteCount: -1) }
  }

  @Test func errorDescriptions() {
    #expect(CryptoError.invalidKeySize(expected: 32, actual: 16).description.contains("32"))
    #expect(
      CryptoError.libcrypto(function: "EVP_Digest", reason: "x").description.contains("EVP_Digest"))
    #expect(CryptoError.authenticationFailed != CryptoError.randomFailed)
  }
}
