import Foundation
import Testing
import VaultCrypto

@testable import VaultCore

/// Passphrase changes rewrite the key file only (KeyFile+Replace.swift).
@Suite("Key file passphrases")
struct KeyFilePassphraseTests {
  let fast = Scrypt.Parameters(n: 1 << 14, r: 8, p: 1)

  @Test("the default scrypt cost is at least N=2^17, r=8, p=1 and is written to the file")
  func defaults() throws {
    #expect(Scrypt.Parameters.default.n >= 1 << 17)
    #expect(Scrypt.Parameters.default.r >= 8 && Scrypt.Parameters.default.p >= 1)
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let key = try MasterKey.generate()
    try KeyFile.write(key, to: dir.file("k"), passphrase: Array("pw".utf8))
    let text = try String(contentsOfFile: dir.file("k"), encoding: .utf8)
    #expect(text.contains("scrypt 131072 8 1"))
  }

  @Test("change, add and remove a passphrase; a wrong one changes nothing")
  func change() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let path = dir.file("k")
    let key = try MasterKey.generate()
    try KeyFile.write(key, to: path, passphrase: Array("old".utf8), parameters: fast)
    #expect(try KeyFile.isPassphraseProtected(at: path))
    let before = try Data(contentsOf: URL(fileURLWithPath: path))
    #expect(throws: VaultError.keyFile(path: path, reason: "wrong passphrase")) {
      try KeyFile.changePassphrase(
        at: path, oldPassphrase: { Array("nope".utf8) }, newPassphrase: Array("new".utf8),
        parameters: fast)
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    try KeyFile.changePassphrase(
      at: path, oldPassphrase: { Array("old".utf8) }, newPassphrase: Array("new".utf8),
      parameters: fast)
    #expect(try KeyFile.read(at: path, passphrase: { Array("new".utf8) }).keyID == key.keyID)
    #expect(throws: VaultError.self) {
      _ = try KeyFile.read(at: path, passphrase: { Array("old".utf8) })
    }
    try KeyFile.changePassphrase(
      at: path, oldPassphrase: { Array("new".utf8) }, newPassphrase: nil)
    #expect(try !KeyFile.isPassphraseProtected(at: path))
    #expect(try KeyFile.read(at: path).keyID == key.keyID)
    let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    #expect(mode == 0o600)
    #expect(try FileManager.default.subpathsOfDirectory(atPath: dir.path).count == 1)
  }
}
