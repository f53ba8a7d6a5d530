import Foundation

/// Where a plain `http://` URL points: the address to connect to, the `Host` header and the
/// request target (path and query exactly as percent-encoded in the URL).
struct OriginTarget: Equatable {
  var host: String
  var port: Int
  var hostHeader: String
  var requestTarget: String

  /// Nil for anything this client leaves to its fallback: other schemes, credentials in
  /// the URL, a missing host.
  init?(_ url: URL) {
    guard url.scheme?.lowercased() == "http", url.user == nil, url.password == nil,
      let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
      var host = components.host, !host.isEmpty
    else { return nil }
    if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    let port = components.port ?? 80
    guard (1...65535).contains(port) else { return nil }
    self.host = host
    self.port = port
    let name = host.contains(":") ? "[\(host)]" : host
    hostHeader = port == 80 ? name : "\(name):\(port)"
    var target = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
    if let query = components.percentEncodedQuery { target += "?" + query }
    requestTarget = target
  }
}
