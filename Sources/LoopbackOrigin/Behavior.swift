/// A way a path's responses deviate from correct HTTP, for testing clients against hostile
/// or flaky origins (modelled on nginx-tests' `slice.t`).
///
/// Behaviours combine. The ones that answer instead of the resource (``always(status:)``,
/// ``failFirst(count:status:)``, ``redirect(to:status:)``, ``redirectLoop``) are tried in list
/// order and the first that applies wins; the others change the normal response and apply to
/// every response of the path. Range behaviours only change responses to range requests.
public enum Behavior: Sendable, Equatable, Hashable {
  /// Range requests get 200 with the full body.
  case ignoreRange
  /// Range requests get 206 whose `Content-Range` is the requested range moved one byte later
  /// (same length, possibly past the end); the body is still the requested bytes.
  case wrongContentRange
  /// Range requests get 206 without a `Content-Range` header.
  case missingContentRange
  /// Headers promise the full `Content-Length`, then `bytes` body bytes are sent and the
  /// connection is closed.
  case dropAfter(bytes: Int)
  /// Every request sees a new `ETag`, so an `If-Range` entity tag never matches.
  case changeETagEachRequest
  /// The first `count` requests after ``LoopbackOrigin/setBehaviors(_:for:)`` are answered
  /// with `status` and a short text body.
  case failFirst(count: Int, status: Int)
  /// Every request is answered with `status` and a short text body (416 adds
  /// `Content-Range: bytes */LENGTH` when the path is served).
  case always(status: Int)
  /// Every request is answered with `status` and `Location: target`, exactly as given.
  case redirect(to: String, status: Int)
  /// Every request is answered with 302 and a `Location` naming the request target itself.
  case redirectLoop
  /// The body is paced to `bytesPerSecond` (at least 1); stops early when the client goes
  /// away or the origin stops.
  case trickle(bytesPerSecond: Int)
  /// The headers are sent, then nothing for `seconds`, then the body.
  case stallAfterHeaders(seconds: Double)
  /// Header names are sent in lowercase (`content-length:`, `content-range:`).
  case lowercaseHeaderNames
  /// No `Content-Type` header.
  case noContentType
  /// No `Content-Length` header: the body is delimited by closing the connection.
  case noContentLength
  /// No `ETag` header, so an `If-Range` entity tag never matches.
  case noETag
}
