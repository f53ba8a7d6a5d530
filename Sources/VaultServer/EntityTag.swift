import VaultCore
import VaultCrypto

/// The strong `ETag` the server sends: a hash of the asset id, its generation and length.
/// It changes whenever the stored bytes could (a new origin version is a new generation)
/// and says nothing about the name or URL (the asset id is already a keyed HMAC).
enum EntityTag {
  static func make(id: AssetID, generation: UInt64, length: UInt64) -> String {
    var input = Array("vault-etag-v1".utf8) + id.bytes
    for value in [generation, length] {
      for shift in stride(from: 56, through: 0, by: -8) {
        input.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
      }
    }
    let digest = (try? SHA256.hash(input)) ?? input
    let hex = digest.prefix(16).map { byte in
      let text = String(byte, radix: 16)
      return byte < 16 ? "0" + text : text
    }
    return "\"" + hex.joined() + "\""
  }

  /// Whether an `If-Range` value lets the Range apply (RFC 9110 §13.1.5): only an exact
  /// strong match of our ETag. A date never matches because the server sends no
  /// `Last-Modified`; a weak tag never matches by definition. Mismatch means "send all".
  static func ifRangeMatches(_ ifRange: String, etag: String) -> Bool {
    ifRange.trimmingCharactersInSpaces() == etag
  }
}
