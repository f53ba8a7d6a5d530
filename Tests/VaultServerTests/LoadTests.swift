import Foundation
import LoopbackOrigin
import Testing
import VaultServer

/// 64 connections reading random ranges of one cold origin resource at once.
@Suite("Load: 64 concurrent connections")
struct LoadTests {
  @Test func randomRangesOfOneColdAsset() async throws {
    let chunk = ServerFixture.chunk
    let size = 256 * chunk  // 4 MiB
    let source = media(size, seed: 99)
    let f = try await ServerFixture.start()
    f.origin.serve("/load.bin", bytes: source)
    let url = f.server.url(forOrigin: f.origin.url("/load.bin"))
    let target = url.path + "?" + (url.query ?? "")
    let port = f.server.port
    let outcome = Outcome()
    let deadline = Date().addingTimeInterval(3)
    // One thread per connection: blocking sockets, like 64 independent players.
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      let group = DispatchGroup()
      for client in 0..<64 {
        group.enter()
        Thread {
          defer { group.leave() }
          var random = SystemRandomNumberGenerator()
          do {
            let connection = try RawHTTPClient(port: port)
            var count = 0
            while Date() < deadline && count < 25 {
              let start = Int.random(in: 0..<size, using: &random)
              let end = min(size - 1, start + Int.random(in: 0..<200_000, using: &random))
              let response = try connection.get(target, port: port, range: "bytes=\(start)-\(end)")
              if response.status != 206 || response.body != Array(source[start...end]) {
                outcome.fail("client \(client): \(response.status) for \(start)-\(end)")
              }
              count += 1
            }
            outcome.add(count)
          } catch {
            outcome.fail("client \(client): \(error)")
          }
        }.start()
      }
      group.notify(queue: .global()) { done.resume() }
    }
    #expect(outcome.failures.isEmpty, "\(outcome.failures.prefix(5))")
    #expect(outcome.responses >= 64)
    // Single flight: each chunk stored once; what the loader took from the origin is the
    // resource plus the tail of transfers cut short by a seek (bytes still in flight).
    // Chunks reach readers before they are stored: wait for the stores to be recorded.
    try await f.server.loader.flush()
    let stats = await f.server.loader.statistics
    let stored = try f.vault.reader(
      for: try f.server.loader.assetID(for: f.origin.url("/load.bin"))
    )
    .presence.count
    print(
      "load: \(outcome.responses) responses, origin: \(stats.originRequests) requests, "
        + "\(stats.bytesFromOrigin) bytes received, \(f.origin.bodyBytesSent) sent; "
        + "\(stats.chunksStored) chunks stored, \(stored) present of 256")
    #expect(stats.chunksStored == stored)
    #expect(stats.bytesFromOrigin <= UInt64(size + size / 8))
    await f.stop()
  }

  final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [String] = []
    private var total = 0
    func fail(_ message: String) { lock.withLock { messages.append(message) } }
    func add(_ count: Int) { lock.withLock { total += count } }
    var failures: [String] { lock.withLock { messages } }
    var responses: Int { lock.withLock { total } }
  }
}
