/// Every error the range loader reports; each renders as one human line.
public enum LoaderError: Error, Sendable, Equatable, CustomStringConvertible {
  /// Offline mode, and the vault lacks these bytes.
  case offlineMissing(url: String, start: UInt64, end: UInt64)
  /// The origin answered with an HTTP status the loader cannot use.
  case originStatus(url: String, status: Int)
  /// The origin broke the protocol (wrong Content-Range, short body, lying length...).
  case originMisbehaved(url: String, reason: String)
  /// The origin could not be reached or the transfer failed.
  case transport(url: String, reason: String)
  /// The origin's content changed while bytes of the old version had already been delivered.
  case originChanged(url: String)
  /// More redirects than allowed, or a redirect loop.
  case tooManyRedirects(url: String)
  /// The requested range lies outside the resource.
  case rangeNotSatisfiable(start: UInt64, end: UInt64?, length: UInt64)
  /// The URL cannot be loaded (not http or https).
  case unsupportedURL(String)
  /// The vault reported an error.
  case vault(String)

  public var description: String {
    switch self {
    case .offlineMissing(let url, let start, let end):
      return "offline: bytes \(start)-\(end) of \(url) are not in the vault"
    case .originStatus(let url, let status):
      return "origin answered HTTP \(status) for \(url)"
    case .originMisbehaved(let url, let reason):
      return "origin misbehaved for \(url): \(reason)"
    case .transport(let url, let reason):
      return "cannot fetch \(url): \(reason)"
    case .originChanged(let url):
      return "the origin's content changed during the read of \(url); read it again"
    case .tooManyRedirects(let url):
      return "too many redirects for \(url)"
    case .rangeNotSatisfiable(let start, let end, let length):
      let shown = end.map { "\(start)-\($0)" } ?? "\(start)-"
      return "range \(shown) is outside the resource (length \(length))"
    case .unsupportedURL(let url):
      return "unsupported URL \(url): use http or https"
    case .vault(let message):
      return message
    }
  }
}
