import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import VaultLoader

/// An ``Origin`` for plain `http://` origins on SwiftNIO: one connection per request, body
/// pieces as large as the socket delivers (up to 1 MiB), no timer per piece. It is several
/// times cheaper per byte than URLSession on Linux, whose libcurl reads 16 KiB at a time and
/// re-arms a dispatch timer for each.
///
/// Everything else goes to `fallback` (URLSession's ``HTTPOrigin`` by default): `https://`
/// URLs, redirects to them, URLs with credentials, and every request while an `http_proxy`
/// variable is set (so proxies keep working as libcurl reads them).
public final class NIOHTTPOrigin: Origin {
  /// Redirects followed before giving up.
  public let maximumRedirects: Int
  /// Seconds without any data (or without a connection) before a request fails.
  public let idleTimeout: TimeInterval
  private let group: any EventLoopGroup
  private let fallback: any Origin
  private let proxied: Bool

  /// Creates an origin client.
  /// - Parameters:
  ///   - group: the event loops the connections run on (default: NIO's shared group).
  ///   - fallback: the client for what this one does not handle (https, proxies).
  ///   - idleTimeout: seconds without any data before a request fails.
  ///   - maximumRedirects: redirects followed per request.
  public init(
    group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
    fallback: (any Origin)? = nil, idleTimeout: TimeInterval = 30, maximumRedirects: Int = 8
  ) {
    self.group = group
    self.idleTimeout = idleTimeout
    self.maximumRedirects = maximumRedirects
    self.fallback =
      fallback ?? HTTPOrigin(idleTimeout: idleTimeout, maximumRedirects: maximumRedirects)
    let environment = ProcessInfo.processInfo.environment
    proxied = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"].contains {
      !(environment[$0] ?? "").isEmpty
    }
  }

  public func send(_ request: OriginRequest) async throws -> OriginResponse {
    var request = request
    var redirects = 0
    while true {
      guard !proxied, let target = OriginTarget(request.url) else {
        return try await fallback.send(request)
      }
      let response = try await exchange(request, target: target)
      guard [301, 302, 303, 307, 308].contains(response.status),
        let location = response.header("location"),
        let next = URL(string: location, relativeTo: request.url)?.absoluteURL
      else { return response }
      response.cancel()
      redirects += 1
      if redirects > maximumRedirects {
        throw LoaderError.tooManyRedirects(url: request.url.absoluteString)
      }
      request.url = next
    }
  }

  /// One request on a new connection; returns once the response head has arrived.
  private func exchange(_ request: OriginRequest, target: OriginTarget) async throws
    -> OriginResponse
  {
    let url = request.url.absoluteString
    var headers = HTTPHeaders()
    headers.add(name: "Host", value: target.hostHeader)
    headers.add(name: "User-Agent", value: "vault")
    headers.add(name: "Accept", value: "*/*")
    // Media bytes must arrive as stored: no compression changing lengths.
    headers.add(name: "Accept-Encoding", value: "identity")
    headers.add(name: "Connection", value: "close")
    if let range = request.rangeHeader { headers.add(name: "Range", value: range) }
    if let ifRange = request.ifRange { headers.add(name: "If-Range", value: ifRange) }
    let head = HTTPRequestHead(
      version: .http1_1, method: .GET, uri: target.requestTarget, headers: headers)
    let exchange = OriginExchange(url: url, request: head)
    let idle = TimeAmount.milliseconds(Int64(idleTimeout * 1000))
    let bootstrap = ClientBootstrap(group: group)
      .connectTimeout(idle)
      .channelOption(.socketOption(.tcp_nodelay), value: 1)
      // The handler reads only while the caller keeps up (OriginExchange's bounds).
      .channelOption(.autoRead, value: false)
      .channelOption(
        .recvAllocator,
        value: AdaptiveRecvByteBufferAllocator(
          minimum: 64 << 10, initial: 256 << 10, maximum: 1 << 20)
      )
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          let sync = channel.pipeline.syncOperations
          try sync.addHTTPClientHandlers()
          try sync.addHandler(OriginResponseHandler(exchange: exchange, idleTimeout: idle))
        }
      }
    let channel: any Channel
    do {
      channel = try await bootstrap.connect(host: target.host, port: target.port).get()
    } catch {
      throw LoaderError.transport(url: url, reason: Self.describe(error))
    }
    exchange.attach(channel)
    return try await withTaskCancellationHandler {
      let head = try await exchange.head()
      var fields: [String: String] = [:]
      for (name, value) in head.headers {
        let key = name.lowercased()
        fields[key] = fields[key].map { $0 + ", " + value } ?? value
      }
      return OriginResponse(
        status: Int(head.status.code), headers: fields, url: request.url,
        body: exchange.makeBody(),
        cancel: { exchange.close() })
    } onCancel: {
      exchange.close()
    }
  }

  /// A short reason for a connection error, in the words of the system.
  static func describe(_ error: any Error) -> String {
    if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
    if let connect = error as? NIOConnectionError {
      if let first = connect.connectionErrors.first { return describe(first.error) }
      if connect.dnsAError != nil || connect.dnsAAAAError != nil {
        return "cannot resolve host \(connect.host)"
      }
    }
    if case ChannelError.connectTimeout = error { return "connection timed out" }
    return String(describing: error)
  }
}
