import Foundation
import NIOCore
import NIOHTTP1
import VaultLoader

/// One request and its response, shared by the caller (awaiting the head, reading the body)
/// and the channel handler (on the event loop). The head resolves once; the body stream
/// ends with the response, or throws if the connection fails first.
final class OriginExchange: @unchecked Sendable {
  let url: String
  let request: HTTPRequestHead
  let body: AsyncThrowingStream<[UInt8], any Error>
  private let bodyContinuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
  private let lock = NSLock()
  private var headResult: Result<HTTPResponseHead, any Error>?
  private var headWaiter: CheckedContinuation<HTTPResponseHead, any Error>?
  private var channel: (any Channel)?
  private var closed = false

  init(url: String, request: HTTPRequestHead) {
    self.url = url
    self.request = request
    (body, bodyContinuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
    bodyContinuation.onTermination = { [weak self] termination in
      // The reader stopped early (cancelled, or done with what it wanted): hang up.
      if case .cancelled = termination { self?.close() }
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
    let channel = lock.withLock {
      closed = true
      return self.channel
    }
    resolveHead(.failure(LoaderError.transport(url: url, reason: "cancelled")))
    bodyContinuation.finish()
    channel?.close(promise: nil)
  }

  /// Waits for the response head.
  func head() async throws -> HTTPResponseHead {
    try await withCheckedThrowingContinuation { continuation in
      lock.lock()
      if let result = headResult {
        lock.unlock()
        continuation.resume(with: result)
      } else {
        headWaiter = continuation
        lock.unlock()
      }
    }
  }

  func resolveHead(_ result: Result<HTTPResponseHead, any Error>) {
    lock.lock()
    guard headResult == nil else {
      lock.unlock()
      return
    }
    headResult = result
    let waiter = headWaiter
    headWaiter = nil
    lock.unlock()
    waiter?.resume(with: result)
  }

  func yield(_ piece: [UInt8]) { bodyContinuation.yield(piece) }

  /// Ends the exchange: the body finishes (with `error`, if any); a head not received yet
  /// fails with it.
  func finish(error: (any Error)?) {
    let failure = error ?? LoaderError.transport(url: url, reason: "connection closed")
    resolveHead(.failure(failure))
    // After a cancel, the hang-up's own errors are not the caller's concern.
    if let error, !lock.withLock({ closed }) {
      bodyContinuation.finish(throwing: error)
    } else {
      bodyContinuation.finish()
    }
  }
}
