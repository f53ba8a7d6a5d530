import Foundation
import NIOCore
import NIOHTTP1
import VaultLoader

/// Sends an ``OriginExchange``'s request when the connection is up and feeds its response
/// back: the head, then each body piece as it is read. Runs on the channel's event loop.
///
/// The channel does not read on its own (`autoRead` off): this handler asks for the next
/// read after each one while the exchange has room, so the caller's pace sets the
/// download's. The idle timeout counts only time spent waiting for the origin, not time
/// paused for the caller.
final class OriginResponseHandler: ChannelInboundHandler {
  typealias InboundIn = HTTPClientResponsePart
  typealias OutboundOut = HTTPClientRequestPart

  private let exchange: OriginExchange
  private let idleTimeout: TimeAmount
  private var received: UInt64 = 0
  private var ended = false
  private var lastActivity = NIODeadline.now()
  private var idleCheck: RepeatedTask?

  init(exchange: OriginExchange, idleTimeout: TimeAmount) {
    self.exchange = exchange
    self.idleTimeout = idleTimeout
  }

  func channelActive(context: ChannelHandlerContext) {
    lastActivity = .now()
    let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
    let period = TimeAmount.nanoseconds(max(idleTimeout.nanoseconds / 4, 10_000_000))
    idleCheck = context.eventLoop.scheduleRepeatedTask(initialDelay: period, delay: period) {
      _ in
      let (handler, context) = bound.value
      handler.checkIdle(context)
    }
    context.write(wrapOutboundOut(.head(exchange.request)), promise: nil)
    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    context.read()
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !ended else { return }
    lastActivity = .now()
    switch unwrapInboundIn(data) {
    case .head(let head):
      exchange.resolveHead(.success(head))
    case .body(let buffer):
      received += UInt64(buffer.readableBytes)
      exchange.deliver(Array(buffer.readableBytesView))
    case .end:
      ended = true
      exchange.finish(error: nil)
      stop(context)
    }
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    if !ended && exchange.shouldRead() { context.read() }
    context.fireChannelReadComplete()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    fail(context, reason: NIOHTTPOrigin.describe(error))
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail(context, reason: "connection closed after \(received) bytes of the body")
    idleCheck?.cancel()
    idleCheck = nil
    context.fireChannelInactive()
  }

  private func checkIdle(_ context: ChannelHandlerContext) {
    guard !ended else { return }
    if exchange.isPaused {
      lastActivity = .now()
    } else if NIODeadline.now() - lastActivity > idleTimeout {
      let seconds = idleTimeout.nanoseconds / 1_000_000_000
      fail(context, reason: "no data for \(seconds) s (timed out)")
    }
  }

  private func fail(_ context: ChannelHandlerContext, reason: String) {
    guard !ended else { return }
    ended = true
    exchange.finish(error: LoaderError.transport(url: exchange.url, reason: reason))
    stop(context)
  }

  private func stop(_ context: ChannelHandlerContext) {
    idleCheck?.cancel()
    idleCheck = nil
    context.close(promise: nil)
  }
}
