import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import VaultCore
import VaultLoader

/// Answers one request: checks Host, token and method, routes, then streams the body.
/// Runs as a task (never on the event loop); blocking vault work goes to the thread pool.
struct Responder: Sendable {
  let server: ServerContext
  let channel: any Channel
  let request: HTTPRequestHead

  func respond() async {
    let started = ContinuousClock.now
    let writer = ResponseWriter(channel: channel, request: request, extraHeaders: corsHeaders)
    do {
      try await route(writer)
    } catch {
      if writer.headSent {
        writer.abort()
      } else if !(error is CancellationError) {
        let failure = HTTPFailure(error)
        // RFC 9110 §15.5.6: a 405 names the methods that are allowed.
        let allow = failure.status == .methodNotAllowed ? [("Allow", "GET, HEAD")] : []
        try? await writer.simple(
          failure.status, [("X-Vault-Error", failure.headerValue)] + failure.headers + allow,
          text: "\(failure.status.code) \(failure.status.reasonPhrase): \(failure.headerValue)\n")
      }
    }
    if let log = server.log {
      let elapsed = ContinuousClock.now - started
      let ms =
        elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
      let range = request.headers["Range"].first.map { " \($0)" } ?? ""
      log(
        "\(request.method) \(label)\(range) \(writer.headSent ? "\(writer.status.code)" : "-") \(writer.bodyBytes)B \(ms)ms"
      )
    }
  }

  private var corsHeaders: [(String, String)] {
    guard let origin = server.corsOrigin else { return [] }
    return [
      ("Access-Control-Allow-Origin", origin),
      ("Access-Control-Expose-Headers", "Accept-Ranges, Content-Range, Content-Length, ETag"),
      ("Vary", "Origin"),
    ]
  }

  /// What the request asked for, for the log line (never the token).
  private var label: String {
    switch Route.parse(request.uri)?.route {
    case .asset(let name): return "assets/\(name)"
    case .stream(let url, _): return "stream \(url.host ?? "")"
    case .notFound, nil: return "-"
    }
  }

  private func route(_ writer: ResponseWriter) async throws {
    // DNS rebinding: a page under an attacker's name resolving to 127.0.0.1 sends that name.
    guard let host = request.headers["Host"].first, server.hostCheck.allows(host) else {
      throw HTTPFailure(.forbidden, "Host is not a loopback name")
    }
    guard let (token, route) = Route.parse(request.uri), server.token.matches(token) else {
      throw HTTPFailure(.notFound, "not found")
    }
    switch request.method {
    case .GET, .HEAD: break
    case .OPTIONS where server.corsOrigin != nil:
      try await writer.simple(
        .noContent,
        [
          ("Access-Control-Allow-Methods", "GET, HEAD"),
          ("Access-Control-Allow-Headers", "Range, If-Range"), ("Access-Control-Max-Age", "600"),
        ], text: "")
      return
    default:
      throw HTTPFailure(.methodNotAllowed, "only GET and HEAD")
    }
    switch route {
    case .asset(let name):
      try await serveAsset(name, writer)
    case .stream(let url, let contentID):
      try await serveStream(url, contentID: contentID, writer)
    case .notFound:
      throw HTTPFailure(.notFound, "not found")
    }
  }

  // MARK: Routes

  private func serveAsset(_ name: String, _ writer: ResponseWriter) async throws {
    let (vault, readers) = (server.vault, server.readers)
    let lease = try await server.pool.runIfActive {
      try readers.take(try vault.resolve(name), vault: vault)
    }
    let asset = lease.reader
    let representation = Representation(
      length: asset.length, contentType: asset.metadata.contentType,
      etag: EntityTag.make(id: asset.assetID, generation: asset.generation, length: asset.length))
    let id = asset.assetID
    try await serve(representation, writer) { start, end in
      try await server.pool.runIfActive { try vault.authorizeRead(id, from: start) }
      // A fetched asset may be partial: say so before the head, not by cutting the body.
      if let missing = asset.presence.firstMissing(
        start: start, end: end, chunkSize: lease.chunkSize)
      {
        throw HTTPFailure(
          .serviceUnavailable, "chunk \(missing) of this asset is not stored")
      }
      return try await streamBlocks(BlockReader(asset), start: start, end: end, writer)
    }
    readers.give(lease)
  }

  private func serveStream(_ url: URL, contentID: String?, _ writer: ResponseWriter) async throws {
    let (loader, vault) = (server.loader, server.vault)
    let info = try await loader.contentInfo(for: url, contentID: contentID)
    let id = try loader.assetID(for: url, contentID: contentID)
    let readers = server.readers
    let lease = try await server.pool.runIfActive { try? readers.take(id, vault: vault) }
    let stored = lease?.reader
    let generation = stored?.generation ?? 0
    let representation = Representation(
      length: info.length, contentType: info.contentType,
      etag: EntityTag.make(id: id, generation: generation, length: info.length))
    let chunkSize = lease?.chunkSize ?? vault.chunkSize
    try await serve(representation, writer) { start, end in
      // The lease decides before the head (the loader checks again: the same play).
      if stored != nil {
        try await server.pool.runIfActive { try vault.authorizeRead(id, from: start) }
      }
      // Fully stored: straight from the vault, as fast as an imported asset.
      if let stored, stored.length == info.length,
        stored.presence.firstMissing(start: start, end: end, chunkSize: chunkSize) == nil
      {
        return try await streamBlocks(BlockReader(stored), start: start, end: end, writer)
      }
      if loader.offline {
        let missing =
          stored?.presence.firstMissing(start: start, end: end, chunkSize: chunkSize) ?? 0
        let from = UInt64(missing) * UInt64(chunkSize)
        throw LoaderError.offlineMissing(
          url: url.absoluteString, start: from, end: min(end, from + UInt64(chunkSize) - 1))
      }
      return try await streamRead(
        loader.read(url, contentID: contentID, from: start, through: end), writer)
    }
    if let lease { readers.give(lease) }
  }

  // MARK: HTTP semantics

  struct Representation {
    var length: UInt64
    var contentType: String?
    var etag: String
  }

  /// Applies Range and If-Range, sends the head, then the body from `prepare`'s streamer.
  /// `prepare` runs before the head, so what it throws still becomes an error status.
  private func serve(
    _ representation: Representation, _ writer: ResponseWriter,
    prepare: (UInt64, UInt64) async throws -> (() async throws -> Void)
  ) async throws {
    let length = representation.length
    var range = ByteRangeRequest(header: request.headers["Range"].first, length: length)
    if let ifRange = request.headers["If-Range"].first,
      !EntityTag.ifRangeMatches(ifRange, etag: representation.etag)
    {
      range = .full
    }
    var fields: [(String, String)] = [
      ("Accept-Ranges", "bytes"), ("ETag", representation.etag),
      ("Content-Type", representation.contentType ?? "application/octet-stream"),
    ]
    let status: HTTPResponseStatus
    let start: UInt64
    let end: UInt64
    switch range {
    case .unsatisfiable:
      try await writer.simple(
        .rangeNotSatisfiable,
        [
          ("Content-Range", "bytes */\(length)"), ("Accept-Ranges", "bytes"),
          ("ETag", representation.etag),
        ])
      return
    case .full:
      (status, start, end) = (.ok, 0, length &- 1)
    case .partial(let first, let last):
      (status, start, end) = (.partialContent, first, last)
      fields.append(("Content-Range", "bytes \(first)-\(last)/\(length)"))
    }
    let count = length == 0 ? 0 : end - start + 1
    fields.append(("Content-Length", "\(count)"))
    let stream = count == 0 || writer.isHEAD ? nil : try await prepare(start, end)
    try await writer.head(status, fields)
    try await stream?()
    try await writer.end()
  }

  /// Streams a loader read. Its first piece is read before this returns, that is before
  /// the head is sent: an origin that fails or misbehaves on the first request (a 5xx after
  /// retries, a wrong Content-Range, a version that changes under every request) gets the
  /// player an error status with a reason, not a 2xx cut short.
  private func streamRead(_ read: LoaderRead, _ writer: ResponseWriter) async throws
    -> () async throws -> Void
  {
    var pieces = read.makeAsyncIterator()
    let first = try await pieces.next()
    return {
      if let first { try await writer.body(ByteBuffer(bytes: first)) }
      while let piece = try await pieces.next() {
        try await writer.body(ByteBuffer(bytes: piece))
      }
    }
  }

  /// Decrypts `start...end` in blocks on the pool; the next block is decrypted while the
  /// previous one drains to the socket (the writer holds at most one pending write).
  /// The first block is decrypted before this returns, that is before the head is sent, so
  /// a damaged chunk there (a player's small range: the whole answer) gets a 500, not a
  /// cut connection.
  private func streamBlocks(
    _ reader: BlockReader, start: UInt64, end: UInt64, _ writer: ResponseWriter
  ) async throws -> () async throws -> Void {
    let (pool, size) = (server.pool, UInt64(server.blockSize))
    let counters = server.served
    let chunk = UInt64(server.vault.chunkSize)
    func block(_ offset: UInt64) async throws -> (ByteBuffer, next: UInt64) {
      let next = min(end + 1, (offset / size + 1) * size)
      let count = Int(next - offset)
      let buffer = try await pool.runIfActive {
        let bytes = try reader.block(offset: offset, count: count)
        let pieces = Int((next - 1) / chunk - offset / chunk + 1)
        if counters.add(bytes: count, pieces: pieces) { counters.save() }
        return bytes
      }
      return (buffer, next)
    }
    let first = try await block(start)
    return {
      try await writer.body(first.0)
      var offset = first.next
      while offset <= end {
        let (buffer, next) = try await block(offset)
        try await writer.body(buffer)
        offset = next
      }
    }
  }

}
