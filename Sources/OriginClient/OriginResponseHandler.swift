import Foundation
import NIOCore
import NIOHTTP1
import VaultLoader

/// Sends an ``OriginExchange``'s request when the connection is up and feeds its response
/// back: the head, then each body piece as it is read. Runs on the channel's event loop.
final class OriginResponseHandler: ChannelInboundHandler {
  typealias InboundIn = HTTPClientResponsePart
  typealias OutboundOut = HTTPClientRequestPart

  private let exchange: OriginExchange
  private let idleTimeout: TimeAmount
  private var received: UInt64 = 0
  private var ended = false

  init(exchange: OriginExchange, idleTimeout: TimeAmount) {
    self.exchange = exchange
    self.idleTimeout = idleTimeout
  }

  func channelActive(context: ChannelHandlerContext) {
    context.write(wrapOutboundOut(.head(exchange.request)), promise: nil)
    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !ended else { return }
    switch unwrapInboundIn(data) {
    case .head(let head):
      exchange.resolveHead(.success(head))
    case .body(let buffer):
      received += UInt64(buffer.readableBytes)
      exchange.yield(Array(buffer.readableBytesView))
    case .end:
      ended = true
      exchange.finish(error: nil)
      context.close(promise: nil)
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    fail(context, reason: NIOHTTPOrigin.describe(error))
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
      let seconds = idleTimeout.nanoseconds / 1_000_000_000
      fail(context, reason: "no data for \(seconds) s (timed out)")
    } else {
      context.fireUserInboundEventTriggered(event)
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail(context, reason: "connection closed after \(received) bytes of the body")
    context.fireChannelInactive()
  }

  private func fail(_ context: ChannelHandlerContext, reason: String) {
    guard !ended else { return }
    ended = true
    exchange.finish(error: LoaderError.transport(url: exchange.url, reason: reason))
    context.close(promise: nil)
  }
}
