import Foundation
import LoopbackOrigin
import OriginClient
import Testing
import VaultCore
import VaultLoader

/// A vault (16 KiB chunks, demo key) plus a loopback origin, torn down together.
struct LoaderFixture {
  let directory: String
  let vault: Vault
  let origin: LoopbackOrigin
  let loader: RangeLoader
  static let chunk = 16_384

  init(
    offline: Bool = false, origin: LoopbackOrigin? = nil, vault: Vault? = nil,
    directory: String? = nil, client: OriginKind = .urlSession,
    log: @escaping @Sendable (String) -> Void = { _ in }
  ) throws {
    let dir =
      directory
      ?? FileManager.default.temporaryDirectory.appendingPathComponent(
        "vault-loader-\(UUID().uuidString)"
      ).path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    self.directory = dir
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent()
      .deletingLastPathComponent().path
    let key = try KeyFile.read(at: root + "/Keys/demo.key")
    self.vault =
      try vault ?? Vault.create(at: dir + "/vault", masterKey: key, chunkSize: Self.chunk)
    self.origin = try origin ?? LoopbackOrigin()
    loader = RangeLoader(
      vault: self.vault, origin: client.make(idleTimeout: 5), offline: offline, log: log)
  }

  /// Reads a range through the loader and collects it.
  func read(
    _ path: String, from start: UInt64 = 0, through end: UInt64? = nil, contentID: String? = nil
  ) async throws
    -> [UInt8]
  {
    var out: [UInt8] = []
    for try await piece in loader.read(
      origin.url(path), contentID: contentID, from: start, through: end)
    {
      out += piece
    }
    // Readers get chunks before they are stored; tests look at the vault afterwards.
    try await loader.flush()
    return out
  }

  func cleanup() {
    origin.stop()
    try? FileManager.default.removeItem(atPath: directory)
  }
}

/// The origin clients the loader is tested with: URLSession (the library's default) and
/// SwiftNIO (what `vault serve` and `vault fetch` use for http://).
enum OriginKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case urlSession, nio

  func make(idleTimeout: TimeInterval) -> any Origin {
    switch self {
    case .urlSession: HTTPOrigin(idleTimeout: idleTimeout)
    case .nio: NIOHTTPOrigin(idleTimeout: idleTimeout)
    }
  }

  var testDescription: String { rawValue }
}

/// Deterministic bytes.
func media(_ count: Int, seed: UInt64) -> [UInt8] {
  var state = seed &+ 0x9E37_79B9_7F4A_7C15
  return (0..<count).map { _ in
    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return UInt8(truncatingIfNeeded: state >> 33)
  }
}
