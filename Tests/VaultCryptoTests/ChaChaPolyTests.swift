import Testing
import VaultCrypto

/// RFC 8439 §2.8.2 test vector.
enum RFC8439 {
  static let key = sequence(from: 0x80, count: 32)
  static let nonce = hex("07 00 00 00 40 41 42 43 44 45 46 47")
  static let aad = hex("50 51 52 53 c0 c1 c2 c3 c4 c5 c6 c7")
  static let plaintext = utf8(
    "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future,"
      + " sunscreen would be it.")
  static let ciphertext = hex(
    """
    d3 1a 8d 34 64 8e 60 db 7b 86 af bc 53 ef 7e c2
    a4 ad ed 51 29 6e 08 fe a9 e2 b5 a7 36 ee 62 d6
    3d be a4 5e 8c a9 67 12 82 fa fb 69 da 92 72 8b
    1a 71 de 0a 9e 06 0b 29 05 d6 a5 b6 7e cd 3b 36
    92 dd bd 7f 2d 77 8b 8c 98 03 ae e3 28 09 1b 58
    fa b3 24 e4 fa d6 75 94 55 85 80 8b 48 31 d7 bc
    3f f4 de f0 8e 4b 7a 9d e5 76 d2 65 86 ce c6 4b
    61 16
    """)
  static let tag = hex("1a:e1:0b:59:4f:09:e2:6a:7e:90:2e:cb:d0:60:06:91")
}

/// Seals with a context into fresh arrays.
func seal(
  _ context: ChaChaPoly.Context, _ plaintext: [UInt8], nonce: [UInt8], aad: [UInt8]
) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
  var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
  var tag = [UInt8](repeating: 0, count: ChaChaPoly.tagByteCount)
  try plaintext.withUnsafeBytes { p in
    try nonce.withUnsafeBytes { n in
      try aad.withUnsafeBytes { a in
        try ciphertext.withUnsafeMutableBytes { c in
          try tag.withUnsafeMutableBytes { t in
            try context.seal(plaintext: p, nonce: n, aad: a, ciphertext: c, tag: t)
          }
        }
      }
    }
  }
  return (ciphertext, tag)
}

/// Opens with a context into `plaintext` (so callers can inspect it after a failure).
func open(
  _ context: ChaChaPoly.Context, _ ciphertext: [UInt8], tag: [UInt8], nonce: [UInt8], aad: [UInt8],
  into plaintext: inout [UInt8]
) throws {
  try ciphertext.withUnsafeBytes { c in
    try tag.withUnsafeBytes { t in
      try nonce.withUnsafeBytes { n in
        try aad.withUnsafeBytes { a in
          try plaintext.withUnsafeMutableBytes { p in
            try context.open(ciphertext: c, tag: t, nonce: n, aad: a, plaintext: p)
          }
        }
      }
    }
  }
}

@Suite struct ChaChaPolyKnownAnswerTests {
  @Test func constants() {
    #expect(ChaChaPoly.keyByteCount == 32)
    #expect(ChaChaPoly.nonceByteCount == 12)
    #expect(ChaChaPoly.tagByteCount == 16)
    #expect(RFC8439.plaintext.count == 114)
    #expect(RFC8439.ciphertext.count == 114)
  }

  @Test func staticSealMatchesRFC8439() throws {
    let combined = try ChaChaPoly.seal(
      RFC8439.plaintext, key: SymmetricKey(bytes: RFC8439.key), nonce: RFC8439.nonce,
      aad: RFC8439.aad)
    #expect(combined == RFC8439.nonce + RFC8439.ciphertext + RFC8439.tag)
  }

  @Test func staticOpenMatchesRFC8439() throws {
    let plaintext = try ChaChaPoly.open(
      RFC8439.nonce + RFC8439.ciphertext + RFC8439.tag, key: SymmetricKey(bytes: RFC8439.key),
      aad: RFC8439.aad)
    #expect(plaintext == RFC8439.plaintext)
  }

  @Test func contextSealMatchesRFC8439() throws {
    let context = try ChaChaPoly.Context(key: SymmetricKey(bytes: RFC8439.key))
    let (ciphertext, tag) = try seal(
      context, RFC8439.plaintext, nonce: RFC8439.nonce, aad: RFC8439.aad)
    #expect(ciphertext == RFC8439.ciphertext)
    #expect(tag == RFC8439.tag)
  }

  /// The context keeps its key and only swaps the nonce per call: interleaving
  /// seals and opens with different nonces, sizes and AADs must not disturb it.
  @Test func contextIsReusableForManySealsAndOpens() throws {
    let key = SymmetricKey(bytes: RFC8439.key)
    let context = try ChaChaPoly.Context(key: key)
    for round in 0..<5 {
      let (ciphertext, tag) = try seal(
        context, RFC8439.plaintext, nonce: RFC8439.nonce, aad: RFC8439.aad)
      #expect(ciphertext == RFC8439.ciphertext, "round \(round)")
      #expect(tag == RFC8439.tag, "round \(round)")

      // Something unrelated in between, in both directions.
      let otherNonce = sequence(from: UInt8(round), count: 12)
      let other = sequence(from: 0x10, count: 1000 + round)
      let sealed = try seal(context, other, nonce: otherNonce, aad: [UInt8(round)])
      var reopened = [UInt8](repeating: 0, count: other.count)
      try open(
        context, sealed.ciphertext, tag: sealed.tag, nonce: otherNonce, aad: [UInt8(round)],
        into: &reopened)
      #expect(reopened == other)
      #expect(
        try ChaChaPoly.seal(other, key: key, nonce: otherNonce, aad: [UInt8(round)])
          == otherNonce + sealed.ciphertext + sealed.tag)

      var plaintext = [UInt8](repeating: 0, count: RFC8439.ciphertext.count)
      try open(
        context, RFC8439.ciphertext, tag: RFC8439.tag, nonce: RFC8439.nonce, aad: RFC8439.aad,
        into: &plaintext)
      #expect(plaintext == RFC8439.plaintext, "round \(round)")
    }
  }

  /// A failed open must not poison the context for the next call.
  @Test func contextRecoversAfterFailedOpen() throws {
    let context = try ChaChaPoly.Context(key: SymmetricKey(bytes: RFC8439.key))
    var badTag = RFC8439.tag
    badTag[0] ^= 1
    var plaintext = [UInt8](repeating: 0, count: RFC8439.ciphertext.count)
    #expect(throws: CryptoError.authenticationFailed) {
      try open(
        context, RFC8439.ciphertext, tag: badTag, nonce: RFC8439.nonce, aad: RFC8439.aad,
        into: &plaintext)
    }
    try open(
      context, RFC8439.ciphertext, tag: RFC8439.tag, nonce: RFC8439.nonce, aad: RFC8439.aad,
      into: &plaintext)
    #expect(plaintext == RFC8439.plaintext)
    let (ciphertext, tag) = try seal(
      context, RFC8439.plaintext, nonce: RFC8439.nonce, aad: RFC8439.aad)
    #expect(ciphertext == RFC8439.ciphertext)
    #expect(tag == RFC8439.tag)
  }

  @Test func inPlaceSealAndOpen() throws {
    let context = try ChaChaPoly.Context(key: SymmetricKey(bytes: RFC8439.key))
    var buffer = RFC8439.plaintext
    var tag = [UInt8](repeating: 0, count: 16)
    try buffer.withUnsafeMutableBytes { b in
      try RFC8439.nonce.withUnsafeBytes { n in
        try RFC8439.aad.withUnsafeBytes { a in
          try tag.withUnsafeMutableBytes { t in
            try context.seal(
              plaintext: UnsafeRawBufferPointer(b), nonce: n, aad: a, ciphertext: b, tag: t)
          }
        }
      }
    }
    #expect(buffer == RFC8439.ciphertext)
    #expect(tag == RFC8439.tag)
    try buffer.withUnsafeMutableBytes { b in
      try RFC8439.nonce.withUnsafeBytes { n in
        try RFC8439.aad.withUnsafeBytes { a in
          try tag.withUnsafeBytes { t in
            try context.open(
              ciphertext: UnsafeRawBufferPointer(b), tag: t, nonce: n, aad: a, plaintext: b)
          }
        }
      }
    }
    #expect(buffer == RFC8439.plaintext)
  }

  @Test func emptyPlaintextAndAAD() throws {
    let key = SymmetricKey(bytes: RFC8439.key)
    let context = try ChaChaPoly.Context(key: key)
    let (ciphertext, tag) = try seal(context, [], nonce: RFC8439.nonce, aad: [])
    #expect(ciphertext.isEmpty)
    #expect(try ChaChaPoly.seal([], key: key, nonce: RFC8439.nonce, aad: []) == RFC8439.nonce + tag)
    #expect(try ChaChaPoly.open(RFC8439.nonce + tag, key: key, aad: []) == [])
    var tampered = tag
    tampered[15] ^= 0x80
    #expect(throws: CryptoError.authenticationFailed) {
      try ChaChaPoly.open(RFC8439.nonce + tampered, key: key, aad: [])
    }
  }

  @Test func largeChunkRoundTrip() throws {
    let key = try SymmetricKey.random()
    let context = try ChaChaPoly.Context(key: key)
    let chunk = try SecureRandom.bytes(count: 64 * 1024 + 7)
    let nonce = try SecureRandom.bytes(count: 12)
    let sealed = try seal(context, chunk, nonce: nonce, aad: utf8("chunk 0"))
    #expect(
      try ChaChaPoly.seal(chunk, key: key, nonce: nonce, aad: utf8("chunk 0")) == nonce
        + sealed.ciphertext + sealed.tag)
    var plaintext = [UInt8](repeating: 0, count: chunk.count)
    try open(
      context, sealed.ciphertext, tag: sealed.tag, nonce: nonce, aad: utf8("chunk 0"),
      into: &plaintext)
    #expect(plaintext == chunk)
  }
}

@Suite struct ChaChaPolyNegativeTests {
  private let context: ChaChaPoly.Context
  private let unverified: UInt8 = 0xEE

  init() throws {
    context = try ChaChaPoly.Context(key: SymmetricKey(bytes: RFC8439.key))
  }

  /// Opens with the given inputs into a buffer pre-filled with a marker, expects
  /// `expected`, and checks the buffer was wiped to zeros.
  private func expectRefused(
    _ expected: CryptoError,
    ciphertext: [UInt8] = RFC8439.ciphertext,
    tag: [UInt8] = RFC8439.tag,
    nonce: [UInt8] = RFC8439.nonce,
    aad: [UInt8] = RFC8439.aad,
    using context: ChaChaPoly.Context? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    var plaintext = [UInt8](repeating: unverified, count: ciphertext.count)
    #expect(throws: expected, sourceLocation: sourceLocation) {
      try open(
        context ?? self.context, ciphertext, tag: tag, nonce: nonce, aad: aad, into: &plaintext)
    }
    #expect(
      plaintext == [UInt8](repeating: 0, count: ciphertext.count), sourceLocation: sourceLocation)
  }

  @Test func flippedTagBit() {
    for bit in [0, 7, 64, 127] {
      var tag = RFC8439.tag
      tag[bit / 8] ^= UInt8(1 << (bit % 8))
      expectRefused(.authenticationFailed, tag: tag)
    }
  }

  @Test func truncatedTag() {
    expectRefused(.invalidTagSize(15), tag: Array(RFC8439.tag.prefix(15)))
    expectRefused(.invalidTagSize(17), tag: RFC8439.tag + [0])
  }

  @Test func wrongAAD() {
    var aad = RFC8439.aad
    aad[0] ^= 1
    expectRefused(.authenticationFailed, aad: aad)
    expectRefused(.authenticationFailed, aad: [])
    expectRefused(.authenticationFailed, aad: RFC8439.aad + [0])
  }

  @Test func wrongNonce() {
    var nonce = RFC8439.nonce
    nonce[11] ^= 1
    expectRefused(.authenticationFailed, nonce: nonce)
    expectRefused(.invalidNonceSize(11), nonce: Array(RFC8439.nonce.prefix(11)))
    expectRefused(.invalidNonceSize(13), nonce: RFC8439.nonce + [0])
  }

  @Test func flippedCiphertextBit() {
    for index in [0, 57, 113] {
      var ciphertext = RFC8439.ciphertext
      ciphertext[index] ^= 0x04
      expectRefused(.authenticationFailed, ciphertext: ciphertext)
    }
    expectRefused(.authenticationFailed, ciphertext: Array(RFC8439.ciphertext.dropLast()))
  }

  @Test func wrongKey() throws {
    var key = RFC8439.key
    key[31] ^= 1
    expectRefused(
      .authenticationFailed, using: try ChaChaPoly.Context(key: SymmetricKey(bytes: key)))
  }

  @Test func mismatchedOutputBufferIsRefusedAndWiped() {
    var plaintext = [UInt8](repeating: unverified, count: RFC8439.ciphertext.count + 1)
    #expect(throws: CryptoError.self) {
      try open(
        context, RFC8439.ciphertext, tag: RFC8439.tag, nonce: RFC8439.nonce, aad: RFC8439.aad,
        into: &plaintext)
    }
    #expect(plaintext == [UInt8](repeating: 0, count: plaintext.count))
  }

  @Test func sealValidatesSizes() throws {
    #expect(throws: CryptoError.invalidNonceSize(8)) {
      try seal(context, RFC8439.plaintext, nonce: Array(RFC8439.nonce.prefix(8)), aad: [])
    }
    var ciphertext = [UInt8](repeating: 0, count: 3)
    var tag = [UInt8](repeating: 0, count: 15)
    #expect(throws: CryptoError.invalidTagSize(15)) {
      try [UInt8](repeating: 1, count: 3).withUnsafeBytes { p in
        try RFC8439.nonce.withUnsafeBytes { n in
          try ciphertext.withUnsafeMutableBytes { c in
            try tag.withUnsafeMutableBytes { t in
              try context.seal(
                plaintext: p, nonce: n, aad: UnsafeRawBufferPointer(start: nil, count: 0),
                ciphertext: c, tag: t)
            }
          }
        }
      }
    }
    #expect(throws: CryptoError.invalidNonceSize(11)) {
      try ChaChaPoly.seal(
        [1, 2, 3], key: SymmetricKey(bytes: RFC8439.key), nonce: repeated(0, 11), aad: [])
    }
  }

  @Test func combinedMessagesAreRefused() throws {
    let key = SymmetricKey(bytes: RFC8439.key)
    let combined = RFC8439.nonce + RFC8439.ciphertext + RFC8439.tag
    var flipped = combined
    flipped[20] ^= 1
    #expect(throws: CryptoError.authenticationFailed) {
      try ChaChaPoly.open(flipped, key: key, aad: RFC8439.aad)
    }
    #expect(throws: CryptoError.authenticationFailed) {
      try ChaChaPoly.open(combined, key: key, aad: [])
    }
    // Shorter than nonce + tag (28 bytes): documented as authenticationFailed.
    #expect(throws: CryptoError.authenticationFailed) {
      try ChaChaPoly.open(Array(combined.prefix(27)), key: key, aad: RFC8439.aad)
    }
    #expect(throws: CryptoError.authenticationFailed) { try ChaChaPoly.open([], key: key, aad: []) }
    #expect(throws: CryptoError.authenticationFailed) {
      try ChaChaPoly.openKey(Array(combined.prefix(27)), key: key, aad: [])
    }
  }

  @Test func invalidKeySizeIsRejected() {
    #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: 16)) {
      try ChaChaPoly.Context(key: SymmetricKey(bytes: repeated(1, 16)))
    }
    #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: 33)) {
      try ChaChaPoly.seal([1], key: SymmetricKey(bytes: repeated(1, 33)), aad: [])
    }
    #expect(throws: CryptoError.invalidKeySize(expected: 32, actual: 0)) {
      try ChaChaPoly.open(repeated(0, 40), key: SymmetricKey(bytes: []), aad: [])
    }
  }
}

@Suite struct ChaChaPolyRandomNonceTests {
  @Test func sealingTwiceGivesDifferentOutputs() throws {
    let key = try SymmetricKey.random()
    let message = utf8("the same plaintext")
    let first = try ChaChaPoly.seal(message, key: key, aad: utf8("aad"))
    let second = try ChaChaPoly.seal(message, key: key, aad: utf8("aad"))
    #expect(first.count == message.count + 28)
    #expect(first != second)
    #expect(first.prefix(12) != second.prefix(12))
    #expect(try ChaChaPoly.open(first, key: key, aad: utf8("aad")) == message)
    #expect(try ChaChaPoly.open(second, key: key, aad: utf8("aad")) == message)
  }

  @Test func keyWrapRoundTrip() throws {
    let wrappingKey = try SymmetricKey.random()
    let fileKey = try SymmetricKey.random()
    let wrapped = try ChaChaPoly.sealKey(fileKey, key: wrappingKey, aad: utf8("file-key v1"))
    #expect(wrapped.count == 32 + 28)
    #expect(try ChaChaPoly.openKey(wrapped, key: wrappingKey, aad: utf8("file-key v1")) == fileKey)
    #expect(throws: CryptoError.authenticationFailed) {
      try ChaChaPoly.openKey(wrapped, key: wrappingKey, aad: utf8("file-key v2"))
    }
    #expect(throws: CryptoError.authenticationFailed) {
      try ChaChaPoly.openKey(wrapped, key: try SymmetricKey.random(), aad: utf8("file-key v1"))
    }
    // The wrapped form is an ordinary combined message.
    #expect(
      try ChaChaPoly.open(wrapped, key: wrappingKey, aad: utf8("file-key v1"))
        == fileKey.withUnsafeBytes { Array($0) })
  }
}
