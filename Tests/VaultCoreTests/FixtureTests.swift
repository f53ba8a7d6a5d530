import Foundation
import Testing

@testable import VaultCore

/// A vault written by format version 1, committed under Fixtures/vault-v1. Every later
/// version must still open and read it. Regenerate only with a format version bump:
/// `VAULT_WRITE_FIXTURE=1 swift test --filter FixtureTests`.
@Suite("Format stability", .serialized)
struct FixtureTests {
  static let assets: [(name: String, size: Int, seed: UInt64, type: String?)] = [
    ("fixture-a.bin", 40_000, 1, "application/octet-stream"),
    ("empty", 0, 2, nil),
    ("one-chunk", 16_384, 3, "audio/mpeg"),
  ]
  static let piped = (name: "piped", size: 20_000, seed: UInt64(4))

  @Test("the committed v1 fixture vault opens and reads byte-exact")
  func fixtureOpens() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let copy = dir.file("vault")
    try FileManager.default.copyItem(atPath: fixturesDirectory + "/vault-v1", toPath: copy)
    let vault = try Vault.open(at: copy, masterKey: try demoKey())
    #expect(vault.chunkSize == 16_384)
    let listed = try vault.list()
    #expect(listed.count == Self.assets.count + 1)
    for asset in Self.assets + [(Self.piped.name, Self.piped.size, Self.piped.seed, nil)] {
      let id = try vault.resolve(asset.name)
      let info = try vault.info(id)
      #expect(info.size == UInt64(asset.size))
      #expect(info.contentType == asset.type)
      let reader = try vault.reader(for: id)
      #expect(
        try reader.read(offset: 0, count: asset.size)
          == patternBytes(count: asset.size, seed: asset.seed))
    }
    #expect(try vault.verify().allSatisfy(\.ok))
  }

  @Test(
    "write the fixture (only with VAULT_WRITE_FIXTURE=1)",
    .enabled(if: ProcessInfo.processInfo.environment["VAULT_WRITE_FIXTURE"] == "1"))
  func writeFixture() throws {
    let target = fixturesDirectory + "/vault-v1"
    try? FileManager.default.removeItem(atPath: target)
    let vault = try Vault.create(at: target, masterKey: try demoKey(), chunkSize: 16_384)
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    for asset in Self.assets {
      let path = dir.file(asset.name)
      try Data(patternBytes(count: asset.size, seed: asset.seed)).write(
        to: URL(fileURLWithPath: path))
      try vault.importFile(at: path, name: asset.name, contentType: asset.type)
    }
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    let bytes = patternBytes(count: Self.piped.size, seed: Self.piped.seed)
    #expect(bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) } == bytes.count)
    close(fds[1])
    try vault.importStream(fileDescriptor: fds[0], sourceName: "pipe", name: Self.piped.name)
    close(fds[0])
    try vault.index.checkpoint()
  }
}
