import Foundation
import LoopbackOrigin
import Testing
import VaultCore
import VaultLoader

/// Leases through the range loader: a prefetch is not a play, reads from the start are,
/// an exhausted lease is refused with the typed error and nothing is served.
@Suite("Leases through the range loader")
struct LeaseLoaderTests {
  final class Clock: Sendable {
    let time = Locked(Date(timeIntervalSince1970: 1_800_000_000))
    func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
    var vaultClock: VaultClock { VaultClock { self.time.withLock { $0 } } }
  }

  /// A new vault on the injected clock and a loader fixture over it.
  static func fixture(_ clock: Clock) throws -> (Vault, LoaderFixture) {
    let dir = FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-lease-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent().path
    let vault = try Vault.create(
      at: dir + "/vault", masterKey: try KeyFile.read(at: root + "/Keys/demo.key"),
      chunkSize: LoaderFixture.chunk, clock: clock.vaultClock)
    return (vault, try LoaderFixture(vault: vault, directory: dir))
  }

  @Test("play counts through the loader; a prefetch is not a play; exhausted is refused")
  func playCounts() async throws {
    let clock = Clock()
    let (vault, f) = try Self.fixture(clock)
    defer { f.cleanup() }
    let body = media(100_000, seed: 9)
    f.origin.serve("/song.mp3", bytes: body)
    let url = f.origin.url("/song.mp3")
    try await f.loader.prefetch(url)
    let id = try f.loader.assetID(for: url)
    try vault.setLease(Lease(maxPlays: 2), on: id)
    try await f.loader.prefetch(url)  // warming again reads every chunk: still not a play
    #expect(try vault.leaseState(of: id)?.plays == 0)
    #expect(try vault.leaseState(of: id)?.firstPlayAt == nil)

    #expect(try await f.read("/song.mp3") == body)  // play 1
    #expect(try await f.read("/song.mp3", from: 1, through: 1) == [body[1]])  // same play
    #expect(try vault.leaseState(of: id)?.plays == 1)
    clock.advance(61)
    #expect(try await f.read("/song.mp3", from: 0, through: 99) == Array(body[0..<100]))
    #expect(try vault.leaseState(of: id)?.plays == 2)
    clock.advance(61)
    let requestsBefore = f.origin.requests.count
    await #expect(
      throws: VaultError.leaseExpired(asset: id.short, denial: .playsExhausted(limit: 2))
    ) {
      _ = try await f.read("/song.mp3")
    }
    // Refused from the vault: not fetched again behind the lease's back.
    #expect(f.origin.requests.count == requestsBefore)
  }

  @Test("an expired asset is refused, shredded, and a later read starts from the origin")
  func expiredIsShredded() async throws {
    let clock = Clock()
    let (vault, f) = try Self.fixture(clock)
    defer { f.cleanup() }
    let body = media(50_000, seed: 10)
    f.origin.serve("/film.mp4", bytes: body)
    let url = f.origin.url("/film.mp4")
    try await f.loader.prefetch(url)
    let id = try f.loader.assetID(for: url)
    try vault.setLease(Lease(notAfter: clock.time.withLock { $0 }.addingTimeInterval(3600)), on: id)
    #expect(
      try await f.read("/film.mp4", from: 20_000, through: 20_009) == Array(body[20_000..<20_010]))
    clock.advance(3600)
    await #expect(throws: VaultError.self) { _ = try await f.read("/film.mp4") }
    #expect(try vault.list().isEmpty)
  }
}
