import Foundation
import LoopbackOrigin
import Testing
import VaultCore
import VaultLoader
import VaultServer

/// Leases through a real `VaultServer`, driven with curl: plays are counted per request
/// that starts in the first chunk (coalesced), a refused read is a 403 with `X-Vault-Lease`.
@Suite(
  "Leases through the server (curl)",
  .enabled(if: ProcessRunner.hasCurl, "curl is not installed (scripts/install-deps --test)"))
struct LeaseServeTests {
  final class Clock: Sendable {
    let time = Locked(Date(timeIntervalSince1970: 1_800_000_000))
    func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
    var now: Date { time.withLock { $0 } }
    var vaultClock: VaultClock { VaultClock { self.time.withLock { $0 } } }
  }

  @Test("play counts and expiry through assets/{id}: 200/206 until refused with 403")
  func playCountsAndExpiry() async throws {
    let clock = Clock()
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-lease-serve-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let key = try KeyFile.read(at: ServerFixture.repositoryRoot + "/Keys/demo.key")
    let vault = try Vault.create(
      at: directory + "/vault", masterKey: key, chunkSize: ServerFixture.chunk,
      clock: clock.vaultClock)
    let body = media(200_000, seed: 11)
    try Data(body).write(to: URL(fileURLWithPath: directory + "/clip"))
    try vault.importFile(
      at: directory + "/clip", name: "clip.mp4", contentType: "video/mp4",
      lease: Lease(notAfter: clock.now.addingTimeInterval(86_400), maxPlays: 2))
    try vault.importFile(
      at: directory + "/clip", name: "free.mp4", contentType: "video/mp4")
    let server = try await VaultServer.start(vault: vault)
    do {
      let url = server.url(forAsset: "clip.mp4")
      let id = try vault.resolve("clip.mp4")
      // A player's first play: probe, open-ended read, seek: one play.
      #expect(try await Curl.get(url, ["-H", "Range: bytes=0-1"]).status == 206)
      let full = try await Curl.get(url)
      #expect(full.status == 200 && full.body == body)
      #expect(try await Curl.get(url, ["-H", "Range: bytes=150000-"]).status == 206)
      #expect(try vault.leaseState(of: id)?.plays == 1)
      clock.advance(120)
      #expect(try await Curl.get(url, ["-H", "Range: bytes=0-"]).status == 206)
      #expect(try vault.leaseState(of: id)?.plays == 2)
      clock.advance(120)
      let refused = try await Curl.get(url, ["-H", "Range: bytes=0-"])
      #expect(refused.status == 403)
      #expect(refused.headers["x-vault-lease"] == "plays-exhausted")
      #expect(refused.body.count < 1000)
      // The last play may still seek (grace period), then the asset expires at notAfter.
      #expect(try await Curl.get(url, ["-H", "Range: bytes=100000-100099"]).status == 206)
      clock.advance(86_400)
      let expired = try await Curl.get(url, ["-H", "Range: bytes=100000-100099"])
      #expect(expired.status == 403)
      #expect(expired.headers["x-vault-lease"] == "expired")
      // Shredded on the spot: the next request does not find it.
      #expect(try await Curl.get(url).status == 404)
      // An asset without a lease is unaffected.
      #expect(try await Curl.get(server.url(forAsset: "free.mp4")).body == body)
    } catch {
      await server.shutdown()
      throw error
    }
    await server.shutdown()
  }
}
