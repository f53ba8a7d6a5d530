import Foundation

/// Reduces an http(s) URL to the canonical string its cache key is derived from, so that
/// every URL that names the same bytes maps to one asset. Pure: no I/O, no DNS.
///
/// Steps, in order (RFC 3986 §6 normalisation plus the vault's ``CacheKeyRules``):
/// 1. Leading and trailing whitespace is trimmed. The scheme must be `http` or `https`
///    (any case) and the URL must have a host.
/// 2. Scheme and host are lower-cased; userinfo (`user:pass@`) and the fragment are dropped;
///    the port is dropped when it is the scheme's default (80, 443) or empty, and written
///    without leading zeros otherwise. An IPv6 literal is written in its RFC 5952 form.
/// 3. The host is replaced by its alias group's canonical name.
/// 4. Percent-encoding is normalised in host, path and query: escapes of unreserved
///    characters (`A-Z a-z 0-9 - . _ ~`) are decoded, every other escape gets upper-case
///    hex digits, and bytes that may not appear literally (space, `"`, `<`, `>`, `[`, `]`,
///    `\`, `^`, `` ` ``, `{`, `|`, `}`, controls, non-ASCII, a `%` not followed by two hex
///    digits) are encoded as UTF-8 escapes. Reserved characters are left as they are, encoded
///    or not: `%2F` and `/` differ.
/// 5. Dot segments are removed from the path (RFC 3986 §5.2.4); an empty path becomes `/`.
/// 6. The query is split on `&`; empty pieces and volatile parameters (matched on the
///    percent-decoded name) are dropped; the rest are sorted byte-wise by name, then value
///    (a parameter without `=` sorts before one with an empty value). Duplicates are kept.
///    `+` is left as is. An empty query leaves no `?`.
public enum URLCanonicalizer {
  /// The canonical form of `url` under `rules`.
  /// - Throws: ``VaultError/invalidArgument(_:)`` for a URL that is not http(s), has no
  ///   host, or has an invalid host or port.
  public static func canonical(url: URL, rules: CacheKeyRules) throws -> String {
    try canonical(urlString: url.absoluteString, rules: rules)
  }

  /// The canonical form of the URL written in `urlString` under `rules`. Use this for text
  /// a user typed: it is parsed here, not by Foundation, so nothing is rewritten first.
  /// - Throws: ``VaultError/invalidArgument(_:)`` as ``canonical(url:rules:)``.
  public static func canonical(urlString: String, rules: CacheKeyRules) throws -> String {
    let text = urlString.trimmingCharacters(in: .whitespacesAndNewlines)
    let parts = try split(Array(text.utf8), original: text)
    let host = rules.canonicalHost(for: try normalizeHost(parts.host, original: text))
    var out = parts.scheme + "://" + host
    if let port = try normalizePort(parts.port, scheme: parts.scheme, original: text) {
      out += ":\(port)"
    }
    out += removeDotSegments(normalizePercent(parts.path, allowed: isPathByte))
    let query = normalizeQuery(parts.query, rules: rules)
    if !query.isEmpty { out += "?" + query }
    return out
  }

  /// The identity of a request: the explicit content id when one is given (the URL is then
  /// not even parsed), else `url:` plus the canonical URL.
  /// - Throws: ``VaultError/invalidArgument(_:)`` for an empty content id, or a URL that
  ///   ``canonical(url:rules:)`` refuses.
  public static func identity(url: URL, contentID: String?, rules: CacheKeyRules) throws
    -> AssetIdentity
  {
    try identity(urlString: url.absoluteString, contentID: contentID, rules: rules)
  }

  /// ``identity(url:contentID:rules:)`` for a URL given as text.
  /// - Throws: as ``identity(url:contentID:rules:)``.
  public static func identity(urlString: String, contentID: String?, rules: CacheKeyRules)
    throws -> AssetIdentity
  {
    if let contentID {
      guard !contentID.isEmpty else { throw VaultError.invalidArgument("the content id is empty") }
      return .contentID(contentID)
    }
    return .url(canonical: try canonical(urlString: urlString, rules: rules))
  }

  /// A host name as identities write it (lower case, escapes normalised, IPv6 in RFC 5952
  /// form), for alias groups.
  /// - Throws: ``VaultError/invalidArgument(_:)`` for an empty or invalid host.
  static func normalizedHost(_ host: String) throws -> String {
    let bytes = Array(host.utf8)
    let forbidden: Set<UInt8> = Set("/?#@".utf8)
    guard !bytes.isEmpty, !bytes.contains(where: { forbidden.contains($0) }) else {
      throw VaultError.invalidArgument("\(host) is not a host name")
    }
    return try normalizeHost(bytes[...], original: host)
  }

  // MARK: Splitting

  private struct Parts {
    var scheme: String
    var host: ArraySlice<UInt8>
    var port: ArraySlice<UInt8>?
    var path: ArraySlice<UInt8>
    var query: ArraySlice<UInt8>?
  }

  private static func split(_ bytes: [UInt8], original: String) throws -> Parts {
    guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
      isAlpha(bytes[0]),
      bytes[..<colon].allSatisfy({ isAlpha($0) || isDigit($0) || "+-.".utf8.contains($0) })
    else {
      throw VaultError.invalidArgument("\(original) is not a URL (no scheme)")
    }
    let scheme = String(decoding: bytes[..<colon].map(lowercase), as: UTF8.self)
    guard scheme == "http" || scheme == "https" else {
      throw VaultError.invalidArgument(
        "only http and https URLs have a cache key; \(original) uses \(scheme):")
    }
    // Everything after the first "#" is the fragment: dropped.
    let end = bytes.firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
    var rest = bytes[(colon + 1)..<end]
    guard rest.starts(with: "//".utf8) else {
      throw VaultError.invalidArgument("\(original) has no host")
    }
    rest = rest.dropFirst(2)
    let authorityEnd =
      rest.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") })
      ?? rest.endIndex
    var authority = rest[..<authorityEnd]
    if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
      authority = authority[(at + 1)...]
    }
    var host = authority
    var port: ArraySlice<UInt8>?
    if authority.first == UInt8(ascii: "[") {
      guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
        throw VaultError.invalidArgument("\(original) has an unterminated IPv6 host")
      }
      host = authority[...close]
      let after = authority[(close + 1)...]
      if let first = after.first {
        guard first == UInt8(ascii: ":") else {
          throw VaultError.invalidArgument("\(original) has junk after its IPv6 host")
        }
        port = after.dropFirst()
      }
    } else if let portColon = authority.lastIndex(of: UInt8(ascii: ":")) {
      host = authority[..<portColon]
      port = authority[(portColon + 1)...]
    }
    guard !host.isEmpty else { throw VaultError.invalidArgument("\(original) has no host") }
    let pathAndQuery = rest[authorityEnd...]
    if let question = pathAndQuery.firstIndex(of: UInt8(ascii: "?")) {
      return Parts(
        scheme: scheme, host: host, port: port, path: pathAndQuery[..<question],
        query: pathAndQuery[(question + 1)...])
    }
    return Parts(scheme: scheme, host: host, port: port, path: pathAndQuery, query: nil)
  }

  // MARK: Host and port

  private static func normalizeHost(_ host: ArraySlice<UInt8>, original: String) throws -> String {
    if host.first == UInt8(ascii: "[") {
      guard host.count > 2, host.last == UInt8(ascii: "]") else {
        throw VaultError.invalidArgument("\(original): invalid IPv6 host")
      }
      let inner = String(decoding: host.dropFirst().dropLast(), as: UTF8.self)
      return "[" + (try normalizeIPv6(inner, original: original)) + "]"
    }
    guard host.allSatisfy({ $0 < 0x80 }) else {
      throw VaultError.invalidArgument(
        "\(original): write an international host name in its xn-- (punycode) form")
    }
    var i = host.startIndex
    while i < host.endIndex {
      let byte = host[i]
      if byte == UInt8(ascii: "%") {
        guard i + 2 < host.endIndex, hexValue(host[i + 1]) != nil, hexValue(host[i + 2]) != nil
        else {
          throw VaultError.invalidArgument("\(original): the host has a broken %-escape")
        }
        i += 3
        continue
      }
      guard isUnreserved(byte) || isSubDelim(byte) else {
        throw VaultError.invalidArgument("\(original): the host contains invalid characters")
      }
      i += 1
    }
    let normalized = normalizePercent(host, allowed: { isUnreserved($0) || isSubDelim($0) })
    // Lower-case letters outside escapes only (escape hex digits stay upper case).
    var out: [UInt8] = []
    var escape = 0
    for byte in normalized {
      if byte == UInt8(ascii: "%") {
        escape = 2
        out.append(byte)
      } else if escape > 0 {
        escape -= 1
        out.append(byte)
      } else {
        out.append(lowercase(byte))
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// RFC 5952 text of an IPv6 address (lower case, longest zero run compressed).
  private static func normalizeIPv6(_ text: String, original: String) throws -> String {
    if let first = text.utf8.first, first == UInt8(ascii: "v") || first == UInt8(ascii: "V") {
      return text.lowercased()  // IPvFuture: nothing more to normalise.
    }
    var address = in6_addr()
    guard inet_pton(AF_INET6, text, &address) == 1 else {
      throw VaultError.invalidArgument("\(original): invalid IPv6 host [\(text)]")
    }
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else {
      throw VaultError.invalidArgument("\(original): invalid IPv6 host [\(text)]")
    }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  private static func normalizePort(
    _ port: ArraySlice<UInt8>?, scheme: String, original: String
  ) throws -> Int? {
    guard let port, !port.isEmpty else { return nil }
    let digits = port.drop { $0 == UInt8(ascii: "0") }
    guard port.allSatisfy(isDigit), digits.count <= 5 else {
      throw VaultError.invalidArgument("\(original) has an invalid port")
    }
    let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    guard value <= 65_535 else {
      throw VaultError.invalidArgument("\(original) has an invalid port")
    }
    if (scheme == "http" && value == 80) || (scheme == "https" && value == 443) { return nil }
    return value
  }

  // MARK: Path and query

  /// RFC 3986 §5.2.4 on a normalised path; empty becomes "/".
  static func removeDotSegments(_ path: [UInt8]) -> String {
    var input = String(decoding: path, as: UTF8.self)[...]
    var output: [Substring] = []
    while !input.isEmpty {
      if input.hasPrefix("../") {
        input = input.dropFirst(3)
      } else if input.hasPrefix("./") {
        input = input.dropFirst(2)
      } else if input.hasPrefix("/./") {
        input = input.dropFirst(2)
      } else if input == "/." {
        input = "/"
      } else if input.hasPrefix("/../") {
        input = input.dropFirst(3)
        _ = output.popLast()
      } else if input == "/.." {
        input = "/"
        _ = output.popLast()
      } else if input == "." || input == ".." {
        input = ""
      } else {
        let start = input.startIndex
        let searchFrom = input.hasPrefix("/") ? input.index(after: start) : start
        let end = input[searchFrom...].firstIndex(of: "/") ?? input.endIndex
        output.append(input[start..<end])
        input = input[end...]
      }
    }
    let result = output.joined()
    return result.isEmpty ? "/" : result
  }

  private static func normalizeQuery(_ query: ArraySlice<UInt8>?, rules: CacheKeyRules) -> String {
    guard let query else { return "" }
    let normalized = normalizePercent(query, allowed: isQueryByte)
    var parameters: [(name: [UInt8], value: [UInt8]?)] = []
    for piece in normalized.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
      let name: ArraySlice<UInt8>
      var value: [UInt8]?
      if let equals = piece.firstIndex(of: UInt8(ascii: "=")) {
        name = piece[..<equals]
        value = Array(piece[(equals + 1)...])
      } else {
        name = piece
      }
      if rules.isVolatile(String(decoding: percentDecode(name), as: UTF8.self)) { continue }
      parameters.append((Array(name), value))
    }
    parameters.sort { lhs, rhs in
      if lhs.name != rhs.name { return lhs.name.lexicographicallyPrecedes(rhs.name) }
      switch (lhs.value, rhs.value) {
      case (nil, nil), (_, nil): return false
      case (nil, _): return true
      case (let l?, let r?): return l.lexicographicallyPrecedes(r)
      }
    }
    return parameters.map { parameter in
      String(decoding: parameter.name, as: UTF8.self)
        + (parameter.value.map { "=" + String(decoding: $0, as: UTF8.self) } ?? "")
    }.joined(separator: "&")
  }

  // MARK: Percent-encoding

  /// Decodes escapes of unreserved characters, upper-cases the hex of the others, encodes
  /// `%` without two hex digits after it and every byte `allowed` refuses.
  static func normalizePercent(_ bytes: ArraySlice<UInt8>, allowed: (UInt8) -> Bool) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    var i = bytes.startIndex
    while i < bytes.endIndex {
      let byte = bytes[i]
      if byte == UInt8(ascii: "%"), i + 2 < bytes.endIndex, let hi = hexValue(bytes[i + 1]),
        let lo = hexValue(bytes[i + 2])
      {
        let decoded = hi << 4 | lo
        if isUnreserved(decoded) {
          out.append(decoded)
        } else {
          appendEscape(decoded, to: &out)
        }
        i += 3
        continue
      }
      if byte != UInt8(ascii: "%"), allowed(byte) {
        out.append(byte)
      } else {
        appendEscape(byte, to: &out)
      }
      i += 1
    }
    return out
  }

  /// Decodes every valid escape (for matching parameter names).
  private static func percentDecode(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
    var out: [UInt8] = []
    var i = bytes.startIndex
    while i < bytes.endIndex {
      if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.endIndex,
        let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2])
      {
        out.append(hi << 4 | lo)
        i += 3
      } else {
        out.append(bytes[i])
        i += 1
      }
    }
    return out
  }

  private static func appendEscape(_ byte: UInt8, to out: inout [UInt8]) {
    let digits = Array("0123456789ABCDEF".utf8)
    out.append(UInt8(ascii: "%"))
    out.append(digits[Int(byte >> 4)])
    out.append(digits[Int(byte & 0x0F)])
  }

  // MARK: Character classes (RFC 3986 §2)

  private static func isAlpha(_ c: UInt8) -> Bool {
    (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
  }

  private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

  private static func lowercase(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c + 0x20 : c }

  private static func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: return c - 0x30
    case 0x41...0x46: return c - 0x41 + 10
    case 0x61...0x66: return c - 0x61 + 10
    default: return nil
    }
  }

  private static func isUnreserved(_ c: UInt8) -> Bool {
    isAlpha(c) || isDigit(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
      || c == UInt8(ascii: "_") || c == UInt8(ascii: "~")
  }

  private static func isSubDelim(_ c: UInt8) -> Bool { "!$&'()*+,;=".utf8.contains(c) }

  /// pchar plus "/" (RFC 3986 path-abempty).
  private static func isPathByte(_ c: UInt8) -> Bool {
    isUnreserved(c) || isSubDelim(c) || c == UInt8(ascii: ":") || c == UInt8(ascii: "@")
      || c == UInt8(ascii: "/")
  }

  /// pchar plus "/" and "?" (RFC 3986 query).
  private static func isQueryByte(_ c: UInt8) -> Bool { isPathByte(c) || c == UInt8(ascii: "?") }
}
