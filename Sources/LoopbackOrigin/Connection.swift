#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One accepted connection, served on its own thread: requests are read, planned and
/// answered one after another (HTTP/1.1 keep-alive) until either side closes, the read
/// timeout passes, the origin stops or ``maxRequests`` is reached.
final class Connection {
  /// Requests served on one connection before it is closed (`Connection: close` on the last).
  static let maxRequests = 1000
  /// Request bodies (which GET and HEAD do not need) larger than this are refused with 413.
  static let maxRequestBody = 1 << 20
  /// Body bytes read from a file per `pread`.
  static let filePieceSize = 64 * 1024

  private let descriptor: Int32
  private let number: Int
  private let server: OriginServer
  private var buffer: [UInt8] = []
  private var fileBuffer: [UInt8] = []

  init(descriptor: Int32, number: Int, server: OriginServer) {
    self.descriptor = descriptor
    self.number = number
    self.server = server
  }

  /// What arrived on the connection.
  private enum Incoming {
    case request(HTTPRequest)
    /// A head that could not be served; answer with this status and close.
    case refused(Int)
    /// End of stream, timeout, error or stop.
    case closed
  }

  /// Serves requests until the connection should close. The caller closes the descriptor.
  func run() {
    for served in 1...Self.maxRequests {
      switch readHead() {
      case .closed:
        return
      case .refused(let status):
        var plan = ResponsePlanner.textResponse(status)
        plan.headers.append(("Connection", "close"))
        _ = sendHead(plan)
        _ = sendBody(plan, source: nil, record: nil)
        return
      case .request(let request):
        guard respond(to: request, last: served == Self.maxRequests) else { return }
      }
    }
  }

  /// Reads the next request head (and discards any request body).
  private func readHead() -> Incoming {
    var scanned = 0
    while true {
      if let end = HTTPRequestParser.headEnd(in: buffer, from: max(0, scanned - 3)) {
        let head = buffer[0..<end]
        let request: HTTPRequest
        do {
          request = try HTTPRequestParser.parse(head)
        } catch {
          return .refused(error.status)
        }
        buffer.removeFirst(end)
        let bodyLength = HTTPRequestParser.contentLength(of: request)
        guard bodyLength <= Self.maxRequestBody else { return .refused(413) }
        return discardBody(bodyLength) ? .request(request) : .closed
      }
      scanned = buffer.count
      if buffer.count > HTTPRequestParser.maxHeadBytes { return .refused(431) }
      guard receiveMore() else { return .closed }
    }
  }

  /// Drops `count` bytes of request body.
  private func discardBody(_ count: Int) -> Bool {
    var remaining = count
    while remaining > 0 {
      if buffer.isEmpty {
        guard receiveMore() else { return false }
      }
      let taken = min(remaining, buffer.count)
      buffer.removeFirst(taken)
      remaining -= taken
    }
    return true
  }

  /// Waits (up to the read timeout) for bytes and appends them to the buffer.
  private func receiveMore() -> Bool {
    guard
      Socket.wait(descriptor, wake: server.wake.readEnd, timeout: server.readTimeout)
        == .readable
    else { return false }
    return Socket.receive(descriptor, into: &buffer, capacity: 16 * 1024)
  }

  /// Answers one request; returns whether the connection stays open.
  private func respond(to request: HTTPRequest, last: Bool) -> Bool {
    let snapshot = server.store.snapshot(request.path)
    let opened = snapshot.resource?.open()
    defer { opened?.1.close() }
    let plan = ResponsePlanner.plan(
      request, snapshot: snapshot, representation: opened?.0,
      closeAnyway: last || server.isStopping)
    let record = RequestRecord(
      method: request.method, path: request.path, query: request.query,
      range: request.header("Range"), ifRange: request.header("If-Range"), status: plan.status,
      bodyBytesSent: 0, headers: request.headerDictionary, connection: number)
    let id = server.log.append(record)
    let complete = sendHead(plan) && sendBody(plan, source: opened?.1, record: id)
    if let logger = server.logger {
      let target = request.query.map { "\(request.path)?\($0)" } ?? request.path
      let range = record.range.map { " (Range: \($0))" } ?? ""
      let outcome = complete ? "" : ", connection dropped"
      logger(
        "LoopbackOrigin #\(number) \(request.method) \(target)\(range) -> \(plan.status)\(outcome)")
    }
    return complete && !plan.closeAfter
  }

  private func sendHead(_ plan: ResponsePlan) -> Bool {
    let head = plan.head()
    return head.withUnsafeBytes { Socket.send(descriptor, $0) } == head.count
  }

  /// Sends the body as planned: after a stall, paced, cut short. Returns whether all of it
  /// was sent.
  private func sendBody(_ plan: ResponsePlan, source: BodySource?, record id: Int?) -> Bool {
    let wake = server.wake.readEnd
    if let stall = plan.stallSeconds, stall > 0 {
      guard Socket.pause(descriptor, wake: wake, seconds: stall) else { return false }
    }
    let total = plan.bodyLength
    let limit = min(total, plan.dropAfter ?? total)
    let pieceSize = plan.bytesPerSecond.map { max(1, min($0 / 20, 16 * 1024)) } ?? 64 * 1024
    let start = Monotonic.now()
    var sent = 0
    while sent < limit {
      let count = min(pieceSize, limit - sent)
      if let rate = plan.bytesPerSecond {
        let due = start + Double(sent + count) / Double(rate)
        let delay = due - Monotonic.now()
        if delay > 0 {
          guard Socket.pause(descriptor, wake: wake, seconds: delay) else { return false }
        }
      }
      guard sendPiece(plan.body, source: source, from: sent, count: count, record: id) else {
        return false
      }
      sent += count
    }
    return sent == total
  }

  /// Sends `count` body bytes starting `position` bytes into the body, counting them first
  /// so a client that received them finds them counted.
  private func sendPiece(
    _ body: ResponsePlan.Body, source: BodySource?, from position: Int, count: Int, record id: Int?
  ) -> Bool {
    if let id { server.log.addBodyBytes(count, to: id) }
    var sent = 0
    switch (body, source) {
    case (.text(let bytes), _):
      sent = bytes.withUnsafeBytes {
        Socket.send(descriptor, UnsafeRawBufferPointer(rebasing: $0[position..<(position + count)]))
      }
    case (.representation(let offset, _), .bytes(let bytes)?):
      let start = offset + position
      sent = bytes.withUnsafeBytes {
        Socket.send(descriptor, UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)]))
      }
    case (.representation(let offset, _), .file(let file)?):
      if readFile(file, at: offset + position, count: count) {
        sent = fileBuffer.withUnsafeBytes {
          Socket.send(descriptor, UnsafeRawBufferPointer(rebasing: $0[0..<count]))
        }
      }
    case (.representation, nil):
      sent = 0
    }
    if let id, sent < count { server.log.addBodyBytes(sent - count, to: id) }
    return sent == count
  }

  /// Reads `count` (at most ``filePieceSize``) bytes at `offset` into the file buffer; false
  /// when the file became shorter.
  private func readFile(_ file: Int32, at offset: Int, count: Int) -> Bool {
    if fileBuffer.count < Self.filePieceSize {
      fileBuffer = [UInt8](repeating: 0, count: Self.filePieceSize)
    }
    var filled = 0
    while filled < count {
      let result = fileBuffer.withUnsafeMutableBytes {
        pread(file, $0.baseAddress.map { $0 + filled }, count - filled, off_t(offset + filled))
      }
      if result > 0 {
        filled += result
      } else if result < 0 && errno == EINTR {
        continue
      } else {
        return false
      }
    }
    return true
  }
}
