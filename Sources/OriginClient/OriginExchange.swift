import Foundation
import NIOCore
import NIOHTTP1
import VaultLoader

/// One request and its response, shared by the caller (awaiting the head, reading the body)
/// and the channel handler (on the event loop). The head resolves once; the body ends with
/// the response, or throws if the connection fails first.
///
/// The body is pulled: the handler reads from the socket only while fewer than
/// `highWater` bytes wait here, and reading resumes once the caller has taken them down to
/// `lowWater`. A caller that stops reading (a store behind a fast origin) stops the
/// download instead of letting the body pile up in memory.
final class OriginExchange: @unchecked Sendable {
  let url: String
  let request: HTTPRequestHead
  private let highWater = 4 << 20
  private let lowWater = 1 << 20
  private let lock = NSLock()
  private let headResult = OneShot<HTTPResponseHead>()
  private var channel: (any Channel)?
  private var closed = false
  private var pieces: [[UInt8]] = []
  private var first = 0
  private var buffered = 0
  private var ended = false
  private var failure: (any Error)?
  private var bodyWaiter: CheckedContinuation<[UInt8]?, any Error>?
  /// The handler stopped reading because `highWater` bytes were waiting.
  private var paused = false

  init(url: String, request: HTTPRequestHead) {
    self.url = url
    self.request = request
  }

  /// The response body as the loader consumes it. Dropping the body (without reading it
  /// to the end or cancelling) also hangs up: nothing else would, while reading is paused.
  func makeBody() -> AsyncThrowingStream<[UInt8], any Error> {
    let owner = BodyOwner(exchange: self)
    return AsyncThrowingStream {
      try await withTaskCancellationHandler {
        try await owner.exchange.nextPiece()
      } onCancel: {
        owner.exchange.close()
      }
    }
  }

  /// The connection, once made (a close requested before that takes effect now).
  func attach(_ channel: any Channel) {
    let closeNow = lock.withLock {
      self.channel = channel
      return closed
    }
    if closeNow { channel.close(promise: nil) }
  }

  /// Stops the transfer: the body ends (without an error: the caller asked) and the
  /// connection is closed.
  func close() {
    let (channel, waiter) = lock.withLock {
      closed = true
      ended = true
      pieces = []
      first = 0
      buffered = 0
      defer { bodyWaiter = nil }
      return (self.channel, bodyWaiter)
    }
    resolveHead(.failure(LoaderError.transport(url: url, reason: "cancelled")))
    waiter?.resume(returning: nil)
    channel?.close(promise: nil)
  }

  /// Waits for the response head.
  func head() async throws -> HTTPResponseHead { try await headResult.value() }

  /// Sets the head, or the failure that ended the exchange before it (the first wins).
  func resolveHead(_ result: Result<HTTPResponseHead, any Error>) {
    headResult.resolve(result)
  }

  // MARK: The handler's side (event loop)

  /// A body piece from the socket.
  func deliver(_ piece: [UInt8]) {
    let waiter: CheckedContinuation<[UInt8]?, any Error>? = lock.withLock {
      guard !ended else { return nil }
      if let waiter = bodyWaiter {
        bodyWaiter = nil
        return waiter
      }
      pieces.append(piece)
      buffered += piece.count
      return nil
    }
    waiter?.resume(returning: piece)
  }

  /// Whether the handler should read again now; if not, it is paused until the caller has
  /// taken enough (``nextPiece()`` then asks the channel to read).
  func shouldRead() -> Bool {
    lock.withLock {
      if ended { return false }
      if buffered < highWater { return true }
      paused = true
      return false
    }
  }

  /// Whether reading is paused for the caller (the idle timeout does not count then).
  var isPaused: Bool { lock.withLock { paused } }

  /// Ends the exchange: the body finishes (with `error`, if any) once the caller has taken
  /// what is queued; a head not received yet fails with it. After a cancel (``close()``)
  /// nothing changes: the hang-up's own errors are not the caller's concern.
  func finish(error: (any Error)?) {
    resolveHead(.failure(error ?? LoaderError.transport(url: url, reason: "connection closed")))
    let waiter: CheckedContinuation<[UInt8]?, any Error>? = lock.withLock {
      guard !ended else { return nil }
      ended = true
      failure = error
      defer { bodyWaiter = nil }
      return bodyWaiter
    }
    if let error {
      waiter?.resume(throwing: error)
    } else {
      waiter?.resume(returning: nil)
    }
  }

  // MARK: The caller's side

  private func nextPiece() async throws -> [UInt8]? {
    try await withCheckedThrowingContinuation { continuation in
      var resume: Result<[UInt8]?, any Error>?
      var readAgain: (any Channel)?
      lock.withLock {
        if first < pieces.count {
          let piece = pieces[first]
          first += 1
          buffered -= piece.count
          if first == pieces.count {
            pieces.removeAll(keepingCapacity: true)
            first = 0
          }
          if paused && buffered <= lowWater {
            paused = false
            readAgain = channel
          }
          resume = .success(piece)
        } else if ended {
          resume = failure.map { .failure($0) } ?? .success(nil)
          failure = nil
        } else {
          bodyWaiter = continuation
        }
      }
      readAgain?.read()
      if let resume { continuation.resume(with: resume) }
    }
  }
}

/// Closes its exchange when the body stream that holds it is gone.
private final class BodyOwner: Sendable {
  let exchange: OriginExchange

  init(exchange: OriginExchange) { self.exchange = exchange }

  deinit { exchange.close() }
}
