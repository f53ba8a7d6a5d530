import Foundation
import LoopbackOrigin
import Testing

/// Connections, keep-alive, timeouts, stopping and concurrency.
@Suite("Connections and lifecycle")
struct LifecycleTests {
  let body = pattern(5000)

  func origin(readTimeout: Double = 30) throws -> LoopbackOrigin {
    let origin = try LoopbackOrigin(readTimeout: readTimeout)
    origin.serve("/a", bytes: body)
    origin.serve("/b", bytes: pattern(300, seed: 3))
    return origin
  }

  @Test("port 0 picks a free port; baseURL and url(_:) point at it")
  func ports() throws {
    let first = try LoopbackOrigin()
    let second = try LoopbackOrigin()
    #expect(first.port != 0)
    #expect(first.port != second.port)
    #expect(first.baseURL.absoluteString == "http://127.0.0.1:\(first.port)/")
    #expect(
      first.url("/x.mp4?sig=1").absoluteString == "http://127.0.0.1:\(first.port)/x.mp4?sig=1")
    #expect(first.url("x").absoluteString == "http://127.0.0.1:\(first.port)/x")
    #expect(throws: LoopbackOriginError.self) { _ = try LoopbackOrigin(port: first.port) }
  }

  @Test("curl fetching two URLs reuses one kept-alive connection")
  func keepAlive() throws {
    let origin = try origin()
    let output = try Curl.run([
      "-sv", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{num_connects} ",
      origin.url("/a").absoluteString, origin.url("/b").absoluteString,
    ])
    #expect(output.exitCode == 0)
    #expect(output.stderr.contains("Re-using existing connection"))
    #expect(output.stdout == "1 0 ")
    #expect(origin.connectionsAccepted == 1)
    let records = origin.requests
    #expect(records.map(\.path) == ["/a", "/b"])
    #expect(Set(records.map(\.connection)).count == 1)
  }

  @Test("Connection: close is honoured: the origin closes after the response")
  func connectionClose() throws {
    let origin = try origin()
    let output = try Curl.run([
      "-sv", "-H", "Connection: close", "-o", "/dev/null", "-o", "/dev/null",
      origin.url("/a").absoluteString, origin.url("/b").absoluteString,
    ])
    #expect(output.exitCode == 0)
    #expect(output.stderr.contains("< Connection: close"))
    #expect(!output.stderr.contains("Re-using existing connection"))
    #expect(origin.connectionsAccepted == 2)
  }

  @Test("pipelined requests are answered in order on one connection")
  func pipelining() throws {
    let origin = try origin()
    let client = try RawClient(port: origin.port)
    try client.send(
      "GET /b HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\n"
        + "HEAD /a?q=1 HTTP/1.1\r\nHost: x\r\n\r\n"
        + "GET /missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    let (text, closed) = client.readAll(timeout: 5)
    #expect(closed)
    // Bodies are not line-terminated, so find the status lines by position.
    let statuses = ["HTTP/1.1 206 Partial Content", "HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found"]
    let positions = statuses.map { text.range(of: $0)?.lowerBound }
    #expect(positions.allSatisfy { $0 != nil })
    #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())
    #expect(origin.requests.map(\.status) == [206, 200, 404])
    #expect(origin.connectionsAccepted == 1)
  }

  @Test(
    "malformed heads are refused with a status and the connection closes",
    arguments: [
      ("garbage\r\n\r\n", 400),
      ("GET /a HTTP/1.1\r\n\r\n", 400),  // no Host
      ("GET /a HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n", 400),
      ("GET /a HTTP/2.0\r\nHost: x\r\n\r\n", 505),
      ("GET /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
      ("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", 405),
    ])
  func refused(request: String, status: Int) throws {
    let origin = try origin()
    let client = try RawClient(port: origin.port)
    try client.send(request)
    let (text, _) = client.readAll(timeout: status == 405 ? 0.5 : 5)
    #expect(text.hasPrefix("HTTP/1.1 \(status) "))
    if status == 405 { #expect(text.contains("Allow: GET, HEAD")) }
  }

  @Test("HTTP/1.0 without keep-alive is answered and closed")
  func http10() throws {
    let origin = try origin()
    let client = try RawClient(port: origin.port)
    try client.send("GET /b HTTP/1.0\r\n\r\n")
    let (text, closed) = client.readAll(timeout: 5)
    #expect(closed)
    #expect(text.hasPrefix("HTTP/1.1 200 OK"))
    #expect(text.contains("Connection: close"))
    #expect(text.utf8.count > 300)
  }

  @Test("a silent client is disconnected after the read timeout")
  func readTimeout() throws {
    let origin = try origin(readTimeout: 0.3)
    let client = try RawClient(port: origin.port)
    let start = Date()
    let (text, closed) = client.readAll(timeout: 5)
    let elapsed = Date().timeIntervalSince(start)
    #expect(closed)
    #expect(text.isEmpty)
    #expect(elapsed >= 0.25)
    #expect(elapsed < 2)
  }

  @Test("a kept-alive connection idles out after the read timeout, between requests")
  func idleTimeout() throws {
    let origin = try origin(readTimeout: 0.3)
    let client = try RawClient(port: origin.port)
    try client.send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
    let (text, closed) = client.readAll(timeout: 3)
    #expect(closed)
    #expect(text.hasPrefix("HTTP/1.1 200 OK"))
  }

  @Test("stop() while a client is mid-download ends promptly and the client sees an error")
  func stopMidDownload() throws {
    let directory = try TempDirectory()
    defer { directory.cleanup() }
    try makeSparseFile(directory.file("big"), size: 1 << 30)
    let origin = try LoopbackOrigin()
    origin.serve("/big", file: directory.file("big"))
    let client = try Curl.Running([
      // Fast enough to drain its socket buffer quickly, slow enough never to finish 1 GiB.
      "-sS", "-o", "/dev/null", "--limit-rate", "20M", origin.url("/big").absoluteString,
    ])
    #expect(origin.waitUntil(timeout: 5) { $0.bodyBytesSent > 0 })
    let start = Date()
    origin.stop()
    let stopTime = Date().timeIntervalSince(start)
    #expect(stopTime < 1)
    let sent = origin.bodyBytesSent
    let output = try client.wait(timeout: 5)
    #expect(output.exitCode == 18)  // partial file: the promised length never arrived
    #expect(sent < 1 << 30)
    #expect(origin.bodyBytesSent == sent)
    #expect(!RawClient.canConnect(port: origin.port))
  }

  @Test("stop() ends promptly while a client that never reads blocks the origin's sends")
  func stopWithStuckClient() throws {
    let directory = try TempDirectory()
    defer { directory.cleanup() }
    try makeSparseFile(directory.file("big"), size: 1 << 30)
    let origin = try LoopbackOrigin()
    origin.serve("/big", file: directory.file("big"))
    let client = try RawClient(port: origin.port)
    try client.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
    // The socket buffers fill up, then the origin's send blocks.
    var previous = -1
    #expect(
      origin.waitUntil(timeout: 5) { origin in
        defer { previous = origin.bodyBytesSent }
        usleep(50_000)
        return origin.bodyBytesSent > 0 && origin.bodyBytesSent == previous
      })
    let start = Date()
    origin.stop()
    #expect(Date().timeIntervalSince(start) < 1)
    #expect(origin.bodyBytesSent < 1 << 30)
  }

  @Test("stop() during a trickle or a stall ends promptly")
  func stopDuringSlowResponses() throws {
    let origin = try LoopbackOrigin()
    origin.serve("/trickle", bytes: pattern(100_000))
    origin.serve("/stall", bytes: pattern(10))
    origin.setBehaviors([.trickle(bytesPerSecond: 1000)], for: "/trickle")
    origin.setBehaviors([.stallAfterHeaders(seconds: 30)], for: "/stall")
    let trickle = try Curl.Running([
      "-sS", "-o", "/dev/null", origin.url("/trickle").absoluteString,
    ])
    let stall = try Curl.Running(["-sS", "-o", "/dev/null", origin.url("/stall").absoluteString])
    #expect(origin.waitUntil(timeout: 5) { $0.requests.count == 2 })
    let start = Date()
    origin.stop()
    #expect(Date().timeIntervalSince(start) < 1)
    #expect(try trickle.wait(timeout: 5).exitCode != 0)
    #expect(try stall.wait(timeout: 5).exitCode != 0)
    origin.stop()  // idempotent
  }

  @Test("dropping the last reference stops the origin")
  func deinitStops() throws {
    var origin: LoopbackOrigin? = try LoopbackOrigin()
    let port = try #require(origin?.port)
    #expect(RawClient.canConnect(port: port))
    origin = nil
    #expect(!RawClient.canConnect(port: port))
  }

  @Test("16 concurrent clients each get their own range")
  func concurrentClients() throws {
    let origin = try origin()
    let clients = try (0..<16).map { index in
      let files = try TempDirectory()
      let running = try Curl.Running([
        "-sS", "-o", files.file("body"), "-H", "Range: bytes=\(index * 300)-\(index * 300 + 299)",
        "--limit-rate", "20k", origin.url("/a?client=\(index)").absoluteString,
      ])
      return (index, files, running)
    }
    for (index, files, running) in clients {
      defer { files.cleanup() }
      let output = try running.wait(timeout: 10)
      #expect(output.exitCode == 0)
      let received = FileManager.default.contents(atPath: files.file("body")).map { [UInt8]($0) }
      #expect(summary(received ?? []) == summary(body[(index * 300)..<(index * 300 + 300)]))
    }
    let records = origin.requests
    #expect(records.count == 16)
    #expect(Set(records.compactMap(\.query)).count == 16)
    #expect(origin.bodyBytesSent == 16 * 300)
    #expect(origin.connectionsAccepted == 16)
  }
}
