/// The `Host` header check against DNS rebinding: a web page whose name an attacker points
/// at 127.0.0.1 still sends its own name as `Host`, so only loopback names and addresses
/// (and the host the server was explicitly bound to) are answered.
struct HostCheck: Sendable {
  /// An explicitly bound host (e.g. a LAN address given with `--host`), also accepted.
  let boundHost: String?

  /// Whether a `Host` header value names this server.
  func allows(_ header: String) -> Bool {
    let host = Self.hostPart(header.trimmingCharactersInSpaces()).lowercased()
    if host.isEmpty { return false }
    if let boundHost, host == boundHost.lowercased() { return true }
    if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
    let octets = host.split(separator: ".", omittingEmptySubsequences: false)
    guard octets.count == 4, octets[0] == "127" else { return false }
    return octets.allSatisfy { part in
      !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCIIDigit)
        && (Int(part) ?? 256) <= 255
    }
  }

  /// The host without its port; brackets removed from an IPv6 literal.
  static func hostPart(_ header: String) -> String {
    if header.hasPrefix("[") {
      guard let close = header.firstIndex(of: "]") else { return "" }
      let rest = header[header.index(after: close)...]
      guard rest.isEmpty || (rest.first == ":" && rest.dropFirst().allSatisfy(\.isASCIIDigit))
      else { return "" }
      return String(header[header.index(after: header.startIndex)..<close])
    }
    let parts = header.split(separator: ":", omittingEmptySubsequences: false)
    switch parts.count {
    case 1: return header
    case 2 where !parts[1].isEmpty && parts[1].allSatisfy(\.isASCIIDigit): return String(parts[0])
    default: return ""
    }
  }
}

extension Character {
  var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
  func trimmingCharactersInSpaces() -> String {
    var text = Substring(self)
    while text.first == " " || text.first == "\t" { text = text.dropFirst() }
    while text.last == " " || text.last == "\t" { text = text.dropLast() }
    return String(text)
  }
}
