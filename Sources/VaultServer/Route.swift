import Foundation

/// What a request target asks for, once the token segment has been checked.
///
/// - `/TOKEN/assets/{id-or-name}`: an imported (or stored) asset by name, 64-hex id or
///   unique id prefix; the name is percent-decoded.
/// - `/TOKEN/stream?url={percent-encoded URL}[&id={content id}]`: an origin resource
///   through the range loader.
/// Anything else under the token (including `/TOKEN/` itself: no listings) is 404.
enum Route: Equatable, Sendable {
  case asset(String)
  case stream(url: URL, contentID: String?)
  case notFound

  /// Splits a request target into its token segment and the route after it.
  /// - Returns: nil when the target has no token segment at all.
  static func parse(_ target: String) -> (token: Substring, route: Route)? {
    let query = target.firstIndex(of: "?")
    let path = target[..<(query ?? target.endIndex)]
    guard path.hasPrefix("/") else { return nil }
    let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
    guard let token = segments.first, !token.isEmpty else { return nil }
    let rest = segments.dropFirst()
    switch rest.first {
    case "assets" where rest.count == 2:
      guard let name = rest.last.flatMap({ String($0).removingPercentEncoding }), !name.isEmpty
      else { return (token, .notFound) }
      return (token, .asset(name))
    case "stream" where rest.count == 1:
      let items =
        URLComponents(string: "http://x/" + String(target[(query ?? target.endIndex)...]))?
        .queryItems ?? []
      guard let text = items.first(where: { $0.name == "url" })?.value,
        let url = URL(string: text), let scheme = url.scheme?.lowercased(),
        scheme == "http" || scheme == "https", url.host != nil
      else { return (token, .notFound) }
      let id = items.first(where: { $0.name == "id" })?.value.flatMap { $0.isEmpty ? nil : $0 }
      return (token, .stream(url: url, contentID: id))
    default:
      return (token, .notFound)
    }
  }
}
