import NIOCore
import NIOHTTP1

/// Writes one response from a request task to its channel (Channel writes are thread-safe
/// and keep their order). Body writes are pipelined with a bound: a new block is handed to
/// the channel only after the previous one was written to the socket, so at most two
/// blocks per connection exist at once (one being written, one being prepared) however
/// slow the client reads.
final class ResponseWriter {
  let channel: any Channel
  let request: HTTPRequestHead
  let extraHeaders: [(String, String)]
  private(set) var headSent = false
  private(set) var status: HTTPResponseStatus = .ok
  private(set) var bodyBytes: UInt64 = 0
  private var pending: EventLoopFuture<Void>?

  init(channel: any Channel, request: HTTPRequestHead, extraHeaders: [(String, String)]) {
    self.channel = channel
    self.request = request
    self.extraHeaders = extraHeaders
  }

  var isHEAD: Bool { request.method == .HEAD }

  /// Sends the status line and headers (plus Date, keep-alive and CORS headers).
  func head(_ status: HTTPResponseStatus, _ fields: [(String, String)]) async throws {
    var headers = HTTPHeaders(fields)
    headers.add(name: "Date", value: HTTPDate.now())
    for (name, value) in extraHeaders { headers.add(name: name, value: value) }
    if !request.isKeepAlive {
      headers.add(name: "Connection", value: "close")
    } else if request.version.major == 1 && request.version.minor == 0 {
      headers.add(name: "Connection", value: "keep-alive")
    }
    self.status = status
    headSent = true
    let head = HTTPResponseHead(version: request.version, status: status, headers: headers)
    // Not awaited: the first body block is prepared while the head goes out (writes keep
    // their order, and the next body write waits for this one).
    pending = channel.writeAndFlush(HTTPServerResponsePart.head(head))
  }

  /// Queues a body block once the previous one has reached the socket.
  func body(_ buffer: ByteBuffer) async throws {
    try Task.checkCancellation()
    if let pending { try await pending.get() }
    bodyBytes += UInt64(buffer.readableBytes)
    pending = channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)))
  }

  /// Waits for the body, ends the response, and closes the connection unless it is kept
  /// alive.
  func end() async throws {
    // `.end` carries no bytes, so it is queued behind the last block without waiting; a
    // failure of that last block still reaches the caller.
    let last = pending
    pending = nil
    let ended: EventLoopFuture<Void> = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
    if !request.isKeepAlive {
      let channel = self.channel
      ended.whenComplete { _ in channel.close(promise: nil) }
    }
    try await last?.get()
  }

  /// A complete response with a short text body (errors, 416).
  func simple(
    _ status: HTTPResponseStatus, _ fields: [(String, String)] = [], text: String? = nil
  ) async throws {
    // RFC 9110 §8.6: a 204 has no content and no Content-Length.
    let body = status == .noContent ? "" : text ?? "\(status.code) \(status.reasonPhrase)\n"
    let framing =
      status == .noContent
      ? []
      : [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "\(body.utf8.count)")]
    try await head(status, fields + framing)
    if !isHEAD && !body.isEmpty { try await self.body(ByteBuffer(string: body)) }
    try await end()
  }

  /// Gives up on a response whose head is out: closing is the only way to tell the client
  /// the body is incomplete.
  func abort() {
    channel.close(promise: nil)
  }
}
