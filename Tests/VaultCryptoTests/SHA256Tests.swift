import Testing
import VaultCrypto

@Suite struct SHA256Tests {
  @Test func abc() throws {
    #expect(
      try SHA256.hash(utf8("abc"))
        == hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
  }

  @Test func emptyMessage() throws {
    #expect(
      try SHA256.hash([]) == hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    )
  }

  @Test func rawBufferOverloadAgrees() throws {
    let message = utf8("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
    let viaBuffer = try message.withUnsafeBytes { try SHA256.hash($0) }
    #expect(viaBuffer == hex("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"))
    #expect(SHA256.byteCount == 32)
  }
}
