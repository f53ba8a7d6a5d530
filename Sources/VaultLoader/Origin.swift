import Foundation

/// A request the loader sends to an origin: always a GET, optionally for a byte range.
public struct OriginRequest: Sendable, Equatable {
  /// The resource.
  public var url: URL
  /// First byte wanted (inclusive), if a range is wanted.
  public var rangeStart: UInt64?
  /// Last byte wanted (inclusive); nil with a start means "to the end".
  public var rangeEnd: UInt64?
  /// Validator for `If-Range`: if the resource changed, the origin sends 200 and the whole new body.
  public var ifRange: String?

  /// Creates a request.
  public init(url: URL, rangeStart: UInt64? = nil, rangeEnd: UInt64? = nil, ifRange: String? = nil)
  {
    self.url = url
    self.rangeStart = rangeStart
    self.rangeEnd = rangeEnd
    self.ifRange = ifRange
  }

  /// The `Range` header value, if any.
  public var rangeHeader: String? {
    guard let rangeStart else { return nil }
    return "bytes=\(rangeStart)-" + (rangeEnd.map(String.init) ?? "")
  }
}

/// The head of an origin response and its body as an async sequence of byte pieces.
public struct OriginResponse: Sendable {
  /// HTTP status.
  public var status: Int
  /// Response headers, names lower-cased.
  public var headers: [String: String]
  /// The URL after redirects.
  public var url: URL
  /// Body pieces in order; ends at the end of the body, throws if the transfer fails.
  public var body: AsyncThrowingStream<[UInt8], any Error>
  /// Stops the transfer (the body then ends).
  public var cancel: @Sendable () -> Void

  /// Creates a response.
  public init(
    status: Int, headers: [String: String], url: URL,
    body: AsyncThrowingStream<[UInt8], any Error>, cancel: @escaping @Sendable () -> Void
  ) {
    self.status = status
    self.headers = headers
    self.url = url
    self.body = body
    self.cancel = cancel
  }

  /// A header by case-insensitive name.
  public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Where the loader gets bytes it does not have. ``HTTPOrigin`` is the URLSession-based
/// default; tests and other transports can plug in their own.
public protocol Origin: Sendable {
  /// Sends `request` and returns once the response head has arrived.
  /// - Throws: ``LoaderError`` for transport failures and too many redirects.
  func send(_ request: OriginRequest) async throws -> OriginResponse
}
