import Foundation
import GRDB
import Testing
import VaultCrypto

@testable import VaultCore

/// A fresh directory under the system temp dir, removed by `cleanup()`.
struct TempDirectory {
  let path: String

  init() throws {
    path =
      FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-test-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  func file(_ name: String) -> String { path + "/" + name }

  func cleanup() { try? FileManager.default.removeItem(atPath: path) }
}

/// The published demo key from Keys/demo.key.
func demoKey() throws -> MasterKey {
  try KeyFile.read(at: repositoryRoot + "/Keys/demo.key")
}

let repositoryRoot = URL(fileURLWithPath: #filePath)
  .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

let fixturesDirectory = URL(fileURLWithPath: #filePath)
  .deletingLastPathComponent().appendingPathComponent("Fixtures").path

/// Deterministic pseudo-random bytes (SplitMix64), so failures reproduce.
func patternBytes(count: Int, seed: UInt64) -> [UInt8] {
  var state = seed
  var out = [UInt8](repeating: 0, count: count)
  var i = 0
  while i < count {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    z ^= z >> 31
    for b in 0..<8 where i < count {
      out[i] = UInt8(truncatingIfNeeded: z >> (8 * UInt64(b)))
      i += 1
    }
  }
  return out
}

/// A vault in a temp dir with the demo key and 16 KiB chunks (small, so tests cover many chunks).
struct TestVault {
  let directory: TempDirectory
  let vault: Vault
  let chunkSize: Int

  init(chunkSize: Int = 16_384) throws {
    directory = try TempDirectory()
    self.chunkSize = chunkSize
    vault = try Vault.create(
      at: directory.file("vault"), masterKey: try demoKey(), chunkSize: chunkSize)
  }

  /// Imports `bytes` under `name` through a real file.
  @discardableResult
  func importBytes(_ bytes: [UInt8], name: String, type: String? = nil) throws -> AssetInfo {
    let source = directory.file("src-\(UUID().uuidString)")
    try Data(bytes).write(to: URL(fileURLWithPath: source))
    defer { try? FileManager.default.removeItem(atPath: source) }
    return try vault.importFile(at: source, name: name, contentType: type)
  }

  /// Exports a whole asset through a real file and returns its bytes.
  func exportBytes(_ name: String) throws -> [UInt8] {
    let out = directory.file("out-\(UUID().uuidString)")
    try vault.export(try vault.resolve(name), to: out)
    defer { try? FileManager.default.removeItem(atPath: out) }
    return Array(try Data(contentsOf: URL(fileURLWithPath: out)))
  }

  /// Path of the sealed file of `name`.
  func assetFile(_ name: String) throws -> String {
    let id = try vault.resolve(name)
    let record = try #require(try vault.index.asset(id))
    return vault.assetPath(id, generation: UInt64(record.generation))
  }

  func cleanup() { directory.cleanup() }
}

/// Reads, mutates and writes back a file's bytes.
func mutateFile(_ path: String, _ change: (inout [UInt8]) -> Void) throws {
  var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
  change(&bytes)
  try Data(bytes).write(to: URL(fileURLWithPath: path))
}

/// Runs a SQL statement directly on a vault's index file (simulates tampering on disk).
func tamperIndex(_ vaultPath: String, _ sql: String, _ arguments: StatementArguments = []) throws {
  let queue = try DatabaseQueue(path: vaultPath + "/index.sqlite")
  try queue.write { try $0.execute(sql: sql, arguments: arguments) }
  try queue.close()
}
