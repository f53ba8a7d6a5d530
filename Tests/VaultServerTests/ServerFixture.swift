import Foundation
import LoopbackOrigin
import OriginClient
import Testing
import VaultCore
import VaultLoader
import VaultServer

/// A vault (demo key), a loopback origin and an in-process server, torn down together.
struct ServerFixture {
  static let chunk = 16_384
  static let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

  let directory: String
  let vault: Vault
  let origin: LoopbackOrigin
  let server: VaultServer

  static func start(
    offline: Bool = false, corsOrigin: String? = nil, chunk: Int = ServerFixture.chunk
  ) async throws -> ServerFixture {
    let directory = FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-server-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let key = try KeyFile.read(at: repositoryRoot + "/Keys/demo.key")
    let vault = try Vault.create(at: directory + "/vault", masterKey: key, chunkSize: chunk)
    let origin = try LoopbackOrigin()
    // The origin client `vault serve` uses.
    let loader = RangeLoader(
      vault: vault, origin: NIOHTTPOrigin(idleTimeout: 10), offline: offline)
    let server = try await VaultServer.start(vault: vault, loader: loader, corsOrigin: corsOrigin)
    return ServerFixture(directory: directory, vault: vault, origin: origin, server: server)
  }

  /// Imports `bytes` as an asset named `name`.
  func importAsset(_ name: String, _ bytes: [UInt8], type: String = "video/mp4") throws {
    let path = directory + "/import-" + name
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    _ = try vault.importFile(at: path, name: name, contentType: type)
  }

  func stop() async {
    await server.shutdown()
    origin.stop()
    try? FileManager.default.removeItem(atPath: directory)
  }
}

/// Deterministic bytes.
func media(_ count: Int, seed: UInt64) -> [UInt8] {
  var state = seed &+ 0x9E37_79B9_7F4A_7C15
  return (0..<count).map { _ in
    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return UInt8(truncatingIfNeeded: state >> 33)
  }
}
