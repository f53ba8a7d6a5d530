import VaultCrypto

/// The secret first path segment of every URL the server answers: 256 random bits,
/// base64url without padding (43 characters, safe in a URL path unescaped).
struct AccessToken: Sendable {
  let value: String

  /// A fresh random token.
  static func random() throws -> AccessToken {
    AccessToken(value: base64URL(try SecureRandom.bytes(count: 32)))
  }

  /// Whether `candidate` is the token. Constant time in the contents, so response timing
  /// does not reveal how many leading characters a guess got right.
  func matches(_ candidate: Substring) -> Bool {
    ConstantTime.equals(Array(value.utf8), Array(candidate.utf8))
  }

  /// Whether `text` can serve as a token: URL-safe characters only, at least 16 of them.
  static func isAcceptable(_ text: String) -> Bool {
    text.utf8.count >= 16
      && text.utf8.allSatisfy { byte in
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
          || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
      }
  }

  private static func base64URL(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    var out = ""
    var index = 0
    while index < bytes.count {
      let b0 = Int(bytes[index])
      let b1 = index + 1 < bytes.count ? Int(bytes[index + 1]) : 0
      let b2 = index + 2 < bytes.count ? Int(bytes[index + 2]) : 0
      let triple = (b0 << 16) | (b1 << 8) | b2
      let characters = min(4, (bytes.count - index) * 8 / 6 + 1)
      for k in 0..<characters { out.append(alphabet[(triple >> (18 - 6 * k)) & 0x3F]) }
      index += 3
    }
    return out
  }
}
