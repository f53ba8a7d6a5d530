import Foundation
import LoopbackOrigin
import OriginClient
import Testing
import VaultLoader

/// The SwiftNIO origin client on its own, against the loopback origin: what the loader tests
/// do not reach (request shape, close-delimited bodies, errors, what it hands to URLSession).
@Suite("NIO origin client")
struct NIOHTTPOriginTests {
  /// Records what reaches the fallback instead of sending it.
  final class RecordingOrigin: Origin, @unchecked Sendable {
    private let lock = NSLock()
    private var urls: [URL] = []
    var received: [URL] { lock.withLock { urls } }

    func send(_ request: OriginRequest) async throws -> OriginResponse {
      lock.withLock { urls.append(request.url) }
      let (body, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
      continuation.finish()
      return OriginResponse(status: 204, headers: [:], url: request.url, body: body, cancel: {})
    }
  }

  func collect(_ response: OriginResponse) async throws -> [UInt8] {
    var out: [UInt8] = []
    for try await piece in response.body { out += piece }
    return out
  }

  @Test("a range request: 206, its headers, the bytes; path and query sent as encoded")
  func rangeRequest() async throws {
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    let source = media(300_000, seed: 40)
    origin.serve("/a dir/clip.mp4", bytes: source, etag: "\"v1\"")
    let client = NIOHTTPOrigin(idleTimeout: 5)
    let url = try #require(
      URL(string: "http://127.0.0.1:\(origin.port)/a%20dir/clip.mp4?sig=a%2Fb&x=1"))
    let response = try await client.send(
      OriginRequest(url: url, rangeStart: 1000, rangeEnd: 200_999, ifRange: "\"v1\""))
    #expect(response.status == 206)
    #expect(response.header("Content-Range") == "bytes 1000-200999/300000")
    #expect(response.header("etag") == "\"v1\"")
    #expect(try await collect(response) == Array(source[1000...200_999]))
    let record = try #require(origin.requests.last)
    #expect(record.path == "/a dir/clip.mp4")
    #expect(record.query == "sig=a%2Fb&x=1")
    #expect(record.range == "bytes=1000-200999")
    #expect(record.ifRange == "\"v1\"")
    #expect(record.headers["accept-encoding"] == "identity")
  }

  @Test("a body without Content-Length is read until the origin closes")
  func closeDelimited() async throws {
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    let source = media(1_000_000, seed: 41)
    origin.serve("/c.bin", bytes: source)
    origin.setBehaviors([.noContentLength], for: "/c.bin")
    let response = try await NIOHTTPOrigin(idleTimeout: 5).send(
      OriginRequest(url: origin.url("/c.bin")))
    #expect(response.status == 200)
    #expect(response.header("content-length") == nil)
    #expect(try await collect(response) == source)
  }

  @Test("a body cut short throws a transport error after the bytes that came")
  func cutShort() async throws {
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    origin.serve("/d.bin", bytes: media(500_000, seed: 42))
    origin.setBehaviors([.dropAfter(bytes: 100_000)], for: "/d.bin")
    let response = try await NIOHTTPOrigin(idleTimeout: 5).send(
      OriginRequest(url: origin.url("/d.bin")))
    var received = 0
    await #expect(throws: LoaderError.self) {
      for try await piece in response.body { received += piece.count }
    }
    #expect(received == 100_000)
  }

  @Test("nothing listening: a transport error naming the URL")
  func refused() async throws {
    let origin = try LoopbackOrigin()
    let url = origin.url("/gone.bin")
    origin.stop()
    await #expect {
      _ = try await NIOHTTPOrigin(idleTimeout: 5).send(OriginRequest(url: url))
    } throws: { error in
      guard case LoaderError.transport(let failed, _) = error else { return false }
      return failed == url.absoluteString
    }
  }

  @Test("https, credentials and a redirect to https go to the fallback client")
  func fallback() async throws {
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    origin.serve("/hop", bytes: [])
    origin.setBehaviors([.redirect(to: "https://cdn.invalid/real.mp4", status: 302)], for: "/hop")
    let recorder = RecordingOrigin()
    let client = NIOHTTPOrigin(fallback: recorder, idleTimeout: 5)
    let secure = try #require(URL(string: "https://cdn.invalid/a.mp4"))
    let credentials = try #require(URL(string: "http://user:pw@127.0.0.1:\(origin.port)/a"))
    _ = try await client.send(OriginRequest(url: secure))
    _ = try await client.send(OriginRequest(url: credentials))
    let redirected = try await client.send(OriginRequest(url: origin.url("/hop")))
    #expect(redirected.status == 204)
    #expect(
      recorder.received.map(\.absoluteString) == [
        secure.absoluteString, credentials.absoluteString, "https://cdn.invalid/real.mp4",
      ])
  }

  @Test("a caller that stops reading stops the download (bounded memory), then gets every byte")
  func backpressure() async throws {
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    let size = 48 << 20
    let source = media(size, seed: 44)
    origin.serve("/big.bin", bytes: source)
    let response = try await NIOHTTPOrigin(idleTimeout: 1).send(
      OriginRequest(url: origin.url("/big.bin")))
    var iterator = response.body.makeAsyncIterator()
    var received = try await iterator.next() ?? []
    // Longer than the idle timeout: a pause for the caller must not count as idle.
    try await Task.sleep(nanoseconds: 1_500_000_000)
    let sentWhilePaused = origin.bodyBytesSent
    // The client's 4 MiB plus the kernel's socket buffers, far below the 48 MiB body.
    #expect(sentWhilePaused < 28 << 20, "sent \(sentWhilePaused) bytes while nobody read")
    while let piece = try await iterator.next() { received += piece }
    #expect(received.count == size)
    #expect(received == source)
  }

  @Test("a response dropped unread hangs up (the origin sees the connection dropped)")
  func droppedResponse() async throws {
    let lines = LockedLines()
    let origin = try LoopbackOrigin(log: { lines.append($0) })
    defer { origin.stop() }
    origin.serve("/big.bin", bytes: media(32 << 20, seed: 45))
    do {
      let response = try await NIOHTTPOrigin(idleTimeout: 5).send(
        OriginRequest(url: origin.url("/big.bin")))
      #expect(response.status == 200)
    }
    // Nobody reads, so only the hang-up ends the origin's send (it would wait on a full
    // socket for its 30 s read timeout otherwise).
    for _ in 0..<50 where !lines.all.contains(where: { $0.contains("connection dropped") }) {
      try await Task.sleep(nanoseconds: 100_000_000)
    }
    #expect(lines.all.contains { $0.contains("GET /big.bin") && $0.contains("connection dropped") })
  }

  /// Log lines from the origin's threads.
  final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
  }

  @Test("cancelling a transfer ends its body and closes the connection")
  func cancel() async throws {
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    origin.serve("/slow.bin", bytes: media(1_000_000, seed: 43))
    origin.setBehaviors([.trickle(bytesPerSecond: 50_000)], for: "/slow.bin")
    let response = try await NIOHTTPOrigin(idleTimeout: 5).send(
      OriginRequest(url: origin.url("/slow.bin")))
    let started = Date()
    var received = 0
    for try await piece in response.body {
      received += piece.count
      if received >= 10_000 { response.cancel() }
    }
    #expect(received < 1_000_000)
    #expect(Date().timeIntervalSince(started) < 10)
  }
}
