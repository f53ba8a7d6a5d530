import NIOCore
import NIOHTTP1
import VaultCore

/// The channel handler of one connection: collects a request's head and hands it to a
/// ``Responder`` task once the request is complete. Runs on the event loop and never
/// blocks it. `HTTPServerPipelineHandler` in front of it holds back pipelined requests until
/// the previous response has ended, so one connection has one responder at a time.
final class RequestHandler: ChannelInboundHandler {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundOut = HTTPServerResponsePart

  private let server: ServerContext
  private var head: HTTPRequestHead?
  private var task: Task<Void, Never>?
  /// Whether a response is being produced; set by the responder task, hence a lock.
  private let responding = Locked(false)

  init(server: ServerContext) { self.server = server }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      self.head = head
    case .body:
      break  // GET and HEAD carry no body; anything else is refused once complete.
    case .end:
      guard let head else { return }
      self.head = nil
      let responder = Responder(server: server, channel: context.channel, request: head)
      let responding = self.responding
      responding.withLock { $0 = true }
      task = server.tasks.spawn {
        await responder.respond()
        responding.withLock { $0 = false }
      }
    }
  }

  /// The client went away: stop producing its response (a loader read releases its claim).
  func channelInactive(context: ChannelHandlerContext) {
    task?.cancel()
    task = nil
    context.fireChannelInactive()
  }

  /// A keep-alive connection idle between requests is closed after a while; one whose
  /// response is still being sent (a paused player) is left alone.
  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if event is IdleStateHandler.IdleStateEvent, !responding.withLock({ $0 }) {
      context.close(promise: nil)
      return
    }
    context.fireUserInboundEventTriggered(event)
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    context.close(promise: nil)
  }
}
