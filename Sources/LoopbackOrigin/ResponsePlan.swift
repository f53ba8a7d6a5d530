import Foundation

/// Everything a connection needs to send one response: decided before any byte is sent.
struct ResponsePlan {
  /// Where the body comes from.
  enum Body: Equatable {
    /// A short generated body (error, redirect).
    case text([UInt8])
    /// `count` bytes of the representation from `offset`.
    case representation(offset: Int, count: Int)
  }

  var status: Int
  /// Header fields in order, with canonical capitalisation.
  var headers: [(name: String, value: String)] = []
  var body: Body = .text([])
  /// False for HEAD and bodiless statuses: the head is sent alone.
  var sendsBody = true
  /// Send at most this many body bytes, then close (``Behavior/dropAfter(bytes:)``).
  var dropAfter: Int?
  /// Pace the body (``Behavior/trickle(bytesPerSecond:)``).
  var bytesPerSecond: Int?
  /// Pause after the head (``Behavior/stallAfterHeaders(seconds:)``).
  var stallSeconds: Double?
  /// Send header names in lowercase.
  var lowercaseNames = false
  /// Close the connection after this response.
  var closeAfter = false

  /// The number of body bytes the response carries.
  var bodyLength: Int {
    guard sendsBody else { return 0 }
    switch body {
    case .text(let bytes): return bytes.count
    case .representation(_, let count): return count
    }
  }

  /// The status line and header fields, ending with the blank line.
  func head() -> [UInt8] {
    var text = "HTTP/1.1 \(status) \(HTTPStatus.reason(status))\r\n"
    for (name, value) in headers {
      text += "\(lowercaseNames ? name.lowercased() : name): \(value)\r\n"
    }
    text += "\r\n"
    return Array(text.utf8)
  }
}

/// HTTP status reason phrases.
enum HTTPStatus {
  private static let reasons: [Int: String] = [
    200: "OK", 204: "No Content", 206: "Partial Content", 301: "Moved Permanently",
    302: "Found", 303: "See Other", 304: "Not Modified", 307: "Temporary Redirect",
    308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout", 410: "Gone",
    413: "Content Too Large", 416: "Range Not Satisfiable", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 500: "Internal Server Error",
    501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
    504: "Gateway Timeout", 505: "HTTP Version Not Supported",
  ]

  /// The reason phrase of a status code (`Status` for codes without one here).
  static func reason(_ status: Int) -> String { reasons[status] ?? "Status" }

  /// Whether a response with this status never has a body (RFC 9110 6.4.1).
  static func isBodiless(_ status: Int) -> Bool {
    (100..<200).contains(status) || status == 204 || status == 304
  }
}
