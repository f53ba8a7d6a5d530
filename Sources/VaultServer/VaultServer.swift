import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import OriginClient
import VaultCore
import VaultLoader

/// A loopback HTTP server through which any player (mpv, ffmpeg, VLC, AVPlayer, a browser)
/// streams from the vault: imported assets at `assets/{id-or-name}` and origin resources
/// through the range loader at `stream?url=...`, all under a secret token path segment.
///
/// ```swift
/// let server = try await VaultServer.start(vault: vault)
/// let url = server.url(forOrigin: URL(string: "https://cdn.example.com/a.mp4")!)
/// // hand `url` to the player ...
/// await server.shutdown()
/// ```
///
/// HTTP semantics and security choices are in docs/SERVER.md.
public final class VaultServer: Sendable {
  /// `http://HOST:PORT/TOKEN/`: every URL the server answers starts with it.
  public let baseURL: URL
  /// The port the server listens on.
  public let port: Int
  /// The range loader behind `stream?url=` (its ``RangeLoader/statistics`` show what came
  /// from the origin).
  public let loader: RangeLoader

  private let context: ServerContext
  private let group: MultiThreadedEventLoopGroup
  private let listener: any Channel
  private let connections: ConnectionRegistry
  private let stopped = Locked(false)

  private init(
    baseURL: URL, port: Int, context: ServerContext, group: MultiThreadedEventLoopGroup,
    listener: any Channel, connections: ConnectionRegistry
  ) {
    self.baseURL = baseURL
    self.port = port
    self.loader = context.loader
    self.context = context
    self.group = group
    self.listener = listener
    self.connections = connections
  }

  /// Seconds a keep-alive connection may wait for its next request before it is closed.
  static let idleSeconds: Int64 = 120

  /// Starts a server.
  ///
  /// - Parameters:
  ///   - vault: The vault to serve from.
  ///   - loader: The range loader for `stream?url=`; nil makes one over `vault` with the
  ///     default origin client (``NIOHTTPOrigin``; pass your own to choose the origin client or timeouts).
  ///   - offline: When `loader` is nil, whether the new loader serves only stored bytes.
  ///   - host: The address to bind. Keep the default (loopback) unless the user asked.
  ///     Requests must name a loopback host (or this host) in `Host`.
  ///   - port: The port; 0 picks a free one (read it from ``port``).
  ///   - token: The secret path segment; nil makes a random 256-bit one. At least 16
  ///     characters from `A-Z a-z 0-9 - _`.
  ///   - corsOrigin: The one web origin allowed to read responses from a page (CORS); nil
  ///     sends no CORS headers.
  ///   - log: Called with one line per request (never containing the token).
  /// - Returns: the running server.
  /// - Throws: ``VaultServerError``.
  public static func start(
    vault: Vault, loader: RangeLoader? = nil, offline: Bool = false,
    host: String = "127.0.0.1", port: Int = 0, token: String? = nil, corsOrigin: String? = nil,
    log: (@Sendable (String) -> Void)? = nil
  ) async throws -> VaultServer {
    let accessToken: AccessToken
    if let token {
      guard AccessToken.isAcceptable(token) else { throw VaultServerError.invalidToken }
      accessToken = AccessToken(value: token)
    } else {
      do { accessToken = try AccessToken.random() } catch {
        throw VaultServerError.cannotStart("no random token: \(error)")
      }
    }
    let loopbackNames = ["127.0.0.1", "localhost", "::1"]
    let pool = NIOThreadPool(numberOfThreads: max(2, System.coreCount))
    pool.start()
    let context = ServerContext(
      vault: vault,
      loader: loader ?? RangeLoader(vault: vault, origin: NIOHTTPOrigin(), offline: offline),
      token: accessToken,
      hostCheck: HostCheck(boundHost: loopbackNames.contains(host) ? nil : host),
      corsOrigin: corsOrigin, log: log, pool: pool)
    let group = MultiThreadedEventLoopGroup(numberOfThreads: min(2, System.coreCount))
    let connections = ConnectionRegistry()
    let bootstrap = ServerBootstrap(group: group)
      .serverChannelOption(.backlog, value: 256)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
      .childChannelInitializer { channel in
        connections.add(channel)
        return channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withPipeliningAssistance: true, withErrorHandling: true)
          try channel.pipeline.syncOperations.addHandler(
            IdleStateHandler(readTimeout: .seconds(Self.idleSeconds)))
          try channel.pipeline.syncOperations.addHandler(RequestHandler(server: context))
        }
      }
    let listener: any Channel
    do {
      listener = try await bootstrap.bind(host: host, port: port).get()
    } catch {
      try? await group.shutdownGracefully()
      try? await pool.shutdownGracefully()
      throw VaultServerError.cannotStart("cannot listen on \(host):\(port): \(error)")
    }
    let boundPort = listener.localAddress?.port ?? port
    let hostText = host.contains(":") ? "[\(host)]" : host
    guard let base = URL(string: "http://\(hostText):\(boundPort)/\(accessToken.value)/") else {
      throw VaultServerError.cannotStart("bad host \(host)")
    }
    return VaultServer(
      baseURL: base, port: boundPort, context: context, group: group, listener: listener,
      connections: connections)
  }

  /// The URL that serves an origin resource through the range loader.
  /// - Parameters:
  ///   - origin: The http(s) URL of the resource.
  ///   - contentID: The cache key to use instead of the URL (see ``RangeLoader``).
  public func url(forOrigin origin: URL, contentID: String? = nil) -> URL {
    var text = baseURL.absoluteString + "stream?url=" + Self.encode(origin.absoluteString)
    if let contentID { text += "&id=" + Self.encode(contentID) }
    return URL(string: text) ?? baseURL
  }

  /// The URL that serves a stored asset.
  /// - Parameter asset: Its name, 64-hex id or unique id prefix.
  public func url(forAsset asset: String) -> URL {
    URL(string: baseURL.absoluteString + "assets/" + Self.encode(asset)) ?? baseURL
  }

  /// Stops the server: no new connections, open connections closed (their responses are
  /// cut and their loader reads released), response tasks awaited, threads stopped.
  /// Chunks are recorded in the vault only after they are written and synced, so a store
  /// cut short here leaves no half-recorded chunk. Idempotent.
  public func shutdown() async {
    let first = stopped.withLock { done -> Bool in
      defer { done = true }
      return !done
    }
    guard first else { return }
    try? await listener.close()
    await connections.closeAll()
    await context.tasks.cancelAndWait()
    context.served.save()
    // Chunks the loader fetched are recorded before the process may exit.
    try? await context.loader.flush()
    try? await context.pool.shutdownGracefully()
    try? await group.shutdownGracefully()
  }

  /// Percent-encodes everything but RFC 3986 unreserved characters.
  static func encode(_ text: String) -> String {
    let allowed = CharacterSet(
      charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
  }
}

/// Why a server could not start.
public enum VaultServerError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The given token is too short or has characters outside `A-Z a-z 0-9 - _`.
  case invalidToken
  /// The socket could not be bound, or another setup step failed.
  case cannotStart(String)

  public var description: String {
    switch self {
    case .invalidToken:
      return "the access token must be at least 16 characters from A-Z a-z 0-9 - _"
    case .cannotStart(let reason):
      return reason
    }
  }
}
