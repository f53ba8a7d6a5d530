/// Entity-tag helpers.
enum EntityTag {
  /// A tag as given if already quoted (`"x"` or `W/"x"`), otherwise quoted.
  static func normalized(_ tag: String) -> String {
    if tag.hasPrefix("\"") || tag.hasPrefix("W/\"") { return tag }
    return "\"\(tag)\""
  }

  /// A strong tag derived from the content: FNV-1a over 8-byte words, plus the length.
  static func derived(from bytes: [UInt8]) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    bytes.withUnsafeBytes { raw in
      let words = raw.count / 8
      for index in 0..<words {
        hash =
          (hash ^ raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self))
          &* 0x100_0000_01b3
      }
      for index in (words * 8)..<raw.count {
        hash = (hash ^ UInt64(raw[index])) &* 0x100_0000_01b3
      }
    }
    return "\"\(String(hash, radix: 16))-\(String(bytes.count, radix: 16))\""
  }

  /// The tag a request sees under ``Behavior/changeETagEachRequest``.
  static func perRequest(_ tag: String?, request index: Int) -> String {
    guard let tag, tag.hasSuffix("\"") else { return "\"r\(index)\"" }
    return "\(tag.dropLast())-r\(index)\""
  }

  /// Whether two tags match by strong comparison (RFC 9110 8.8.3.2): both strong, same text.
  static func strongMatch(_ a: String, _ b: String) -> Bool {
    !a.hasPrefix("W/") && !b.hasPrefix("W/") && a == b
  }
}
