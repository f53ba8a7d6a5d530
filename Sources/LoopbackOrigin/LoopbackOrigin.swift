import Foundation

/// A small HTTP/1.1 origin server on 127.0.0.1 for tests, demos and benchmarks: it serves
/// bodies from memory or from files, follows RFC 9110 by default (GET, HEAD, single byte
/// ranges, `If-Range`, 416), and misbehaves on purpose per path (see ``Behavior``).
///
/// ```swift
/// let origin = try LoopbackOrigin()
/// origin.serve("/song.mp3", bytes: audio, contentType: "audio/mpeg")
/// origin.setBehaviors([.dropAfter(bytes: 1000)], for: "/song.mp3")
/// let url = origin.url("/song.mp3?X-Amz-Signature=abc")   // the query does not route
/// ```
///
/// The listener runs on its own thread and each connection on another (at most
/// 128 at once); ``stop()`` or `deinit` closes everything and waits for those threads.
/// Thread-safe: every method may be called from any thread while requests are served.
public final class LoopbackOrigin: Sendable {
  private let server: OriginServer

  /// Binds 127.0.0.1 and starts serving.
  ///
  /// - Parameters:
  ///   - port: The port to bind; 0 picks a free one (read it back from ``port``).
  ///   - readTimeout: Seconds a connection may stay silent (idle between requests or in the
  ///     middle of one), and a send may stall, before the origin closes it.
  ///   - log: Called with one line per response, from the connection's thread; none by
  ///     default. It must not call ``stop()``.
  /// - Throws: ``LoopbackOriginError`` when the socket cannot be set up.
  public init(
    port: UInt16 = 0, readTimeout: Double = 30, log: (@Sendable (String) -> Void)? = nil
  ) throws {
    server = try OriginServer(port: port, readTimeout: readTimeout, logger: log)
    server.start()
  }

  deinit { server.stop() }

  /// The port the origin listens on.
  public var port: UInt16 { server.port }

  /// `http://127.0.0.1:PORT/`.
  public var baseURL: URL { makeURL("http://127.0.0.1:\(port)/") }

  /// The URL of a path on this origin; `path` may carry a query (`/a.mp4?token=1`). Characters
  /// not allowed in a URL path or query are percent-encoded.
  public func url(_ path: String) -> URL {
    let relative = ResourceStore.key(path)
    let mark = relative.firstIndex(of: "?")
    let pathPart = String(relative[..<(mark ?? relative.endIndex)])
    var text = "http://127.0.0.1:\(port)"
    text += pathPart.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? pathPart
    if let mark {
      let query = String(relative[relative.index(after: mark)...])
      text += "?" + (query.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? query)
    }
    return makeURL(text)
  }

  /// Serves bytes from memory at `path` (replacing what was there).
  ///
  /// - Parameters:
  ///   - contentType: The `Content-Type`; nil sends none.
  ///   - etag: The `ETag` (quoted if given bare); nil derives a strong tag from the bytes.
  ///     Use ``Behavior/noETag`` for an origin without one.
  ///   - lastModified: The `Last-Modified` date (whole seconds); nil sends none.
  public func serve(
    _ path: String, bytes: [UInt8], contentType: String? = "application/octet-stream",
    etag: String? = nil, lastModified: Date? = nil
  ) {
    let tag = etag.map(EntityTag.normalized) ?? EntityTag.derived(from: bytes)
    server.store.set(
      Resource(
        body: .bytes(bytes), contentType: contentType, etag: tag, lastModified: lastModified),
      at: path)
  }

  /// Serves `data` from memory at `path`; see ``serve(_:bytes:contentType:etag:lastModified:)``.
  public func serve(
    _ path: String, data: Data, contentType: String? = "application/octet-stream",
    etag: String? = nil, lastModified: Date? = nil
  ) {
    serve(
      path, bytes: [UInt8](data), contentType: contentType, etag: etag,
      lastModified: lastModified)
  }

  /// Serves a file at `path`, read in 64 KiB pieces per response (any size, constant memory).
  /// The file is opened per request: its current length counts, and a missing file gives 404.
  ///
  /// - Parameters:
  ///   - contentType: The `Content-Type`; nil sends none.
  ///   - etag: The `ETag` (quoted if given bare); nil derives `"MTIME-SIZE"` (hex) like nginx.
  ///     `Last-Modified` is the file's modification time.
  public func serve(
    _ path: String, file: String, contentType: String? = "application/octet-stream",
    etag: String? = nil
  ) {
    server.store.set(
      Resource(
        body: .file(file), contentType: contentType, etag: etag.map(EntityTag.normalized),
        lastModified: nil),
      at: path)
  }

  /// Stops serving `path` (404 from then on, unless a behaviour answers).
  public func remove(_ path: String) { server.store.remove(path) }

  /// Sets how `path` misbehaves, replacing earlier behaviours; `[]` makes it well-behaved.
  /// Also restarts the path's request count used by ``Behavior/failFirst(count:status:)``.
  /// Behaviours apply to a path whether or not anything is served there.
  public func setBehaviors(_ behaviors: [Behavior], for path: String) {
    server.store.setBehaviors(behaviors, for: path)
  }

  /// Replaces the body at `path` as if the origin file changed: new bytes and `ETag` (nil
  /// derives one from the bytes), same content type; a `Last-Modified` moves forward by at
  /// least a second. Behaviours are kept.
  public func replaceBody(_ path: String, bytes: [UInt8], etag: String? = nil) {
    let tag = etag.map(EntityTag.normalized) ?? EntityTag.derived(from: bytes)
    server.store.replaceBody(path, bytes: bytes, etag: tag)
  }

  /// The requests answered since the start or the last ``resetStatistics()``, oldest first.
  /// A record appears before its response's first byte is sent. Heads that do not parse
  /// (answered 400, 431, 501 or 505) are not recorded.
  public var requests: [RequestRecord] { server.log.records }

  /// Body bytes sent across all requests since the start or the last ``resetStatistics()``.
  public var bodyBytesSent: Int { server.log.bodyBytesSent }

  /// TCP connections accepted since the start or the last ``resetStatistics()``.
  public var connectionsAccepted: Int { server.log.connectionsAccepted }

  /// Forgets the request records and zeroes the counters (a response still being sent keeps
  /// adding its bytes to ``bodyBytesSent``).
  public func resetStatistics() { server.log.reset() }

  /// Closes the listener and every connection (clients mid-response see the connection
  /// close), and waits for the origin's threads to finish. Idempotent; `deinit` calls it.
  public func stop() { server.stop() }

  private func makeURL(_ text: String) -> URL {
    guard let url = URL(string: text) else { preconditionFailure("invalid URL \(text)") }
    return url
  }
}
