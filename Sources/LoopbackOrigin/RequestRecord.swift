/// One request the origin answered, as it arrived and as it was answered.
///
/// A record is added before the first response byte is sent, and its ``bodyBytesSent`` is
/// counted before each piece is handed to the socket, so a client that has received bytes
/// always finds them counted.
public struct RequestRecord: Sendable, Equatable {
  /// The request method (`GET`, `HEAD`, ...).
  public var method: String
  /// The percent-decoded path used for routing, without the query.
  public var path: String
  /// The raw query string after `?`, or nil when the target had no `?`.
  public var query: String?
  /// The `Range` header as received.
  public var range: String?
  /// The `If-Range` header as received.
  public var ifRange: String?
  /// The response status code.
  public var status: Int
  /// The body bytes sent for this request (excluding headers).
  public var bodyBytesSent: Int
  /// Every request header, keyed by lowercased name; repeated fields are joined with `, `.
  public var headers: [String: String]
  /// The sequence number (from 1) of the TCP connection that carried the request.
  public var connection: Int

  /// Creates a record.
  public init(
    method: String, path: String, query: String?, range: String?, ifRange: String?,
    status: Int, bodyBytesSent: Int, headers: [String: String], connection: Int
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.range = range
    self.ifRange = ifRange
    self.status = status
    self.bodyBytesSent = bodyBytesSent
    self.headers = headers
    self.connection = connection
  }
}
