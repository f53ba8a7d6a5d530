import Foundation
import Testing
import VaultCrypto

@testable import VaultCore

@Suite("Key providers")
struct KeyProviderTests {
  static func secret(_ seed: UInt64) -> SymmetricKey {
    SymmetricKey(bytes: patternBytes(count: 32, seed: seed))
  }

  /// Every byte of every file under `path`, concatenated.
  func everything(_ path: String) throws -> Data {
    var all = Data()
    let enumerator = FileManager.default.enumerator(atPath: path)
    while let name = enumerator?.nextObject() as? String {
      var isDir: ObjCBool = false
      if FileManager.default.fileExists(atPath: path + "/" + name, isDirectory: &isDir),
        !isDir.boolValue
      {
        all += try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
      }
    }
    return all
  }

  @Test("device-bound: a vault copied to another device (another secret) opens nothing")
  func deviceBoundCopy() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let deviceA = DeviceBoundKeyProvider { Self.secret(1) }
    let deviceB = DeviceBoundKeyProvider { Self.secret(2) }
    let vault = try Vault.create(at: dir.file("v"), keyProvider: deviceA, chunkSize: 16_384)
    let bytes = patternBytes(count: 50_000, seed: 3)
    try Data(bytes).write(to: URL(fileURLWithPath: dir.file("in")))
    try vault.importFile(at: dir.file("in"), name: "film")
    try FileManager.default.copyItem(atPath: dir.file("v"), toPath: dir.file("copy"))
    #expect {
      try Vault.open(at: dir.file("copy"), keyProvider: deviceB)
    } throws: { error in
      if case VaultError.wrongKey = error { return true }
      return false
    }
    // The same device opens its own copy; a second vault there gets another key.
    let back = try Vault.open(at: dir.file("copy"), keyProvider: deviceA)
    #expect(try back.reader(for: try back.resolve("film")).read(offset: 0, count: 50_000) == bytes)
    let second = try Vault.create(at: dir.file("v2"), keyProvider: deviceA)
    #expect(second.keyID != vault.keyID)
    // Neither the secret nor the derived key is written anywhere.
    let files = try everything(dir.file("v"))
    let derived = try deviceA.masterKey(
      for: KeyContext(directory: dir.file("v"), vaultID: try Vault.publicVaultID(at: dir.file("v")))
    )
    #expect(derived.keyID == vault.keyID)
    for key in [Self.secret(1), derived.key] {
      #expect(files.range(of: Data(key.withUnsafeBytes { Array($0) })) == nil)
    }
  }

  @Test("environment variable provider; an unset or malformed variable is one clear error")
  func environmentProvider() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let name = "VAULT_TEST_KEY"
    let key = try MasterKey.generate()
    let hex = key.key.withUnsafeBytes { Bytes.hex($0) }
    // An environment of its own: `setenv` in a test process races every thread that reads
    // the environment (it crashed Foundation's Process.run in another test).
    let environment = Locked([name: hex])
    let provider = EnvironmentKeyProvider(variable: name) { environment.withLock { $0 } }
    let vault = try Vault.create(at: dir.file("v"), keyProvider: provider)
    #expect(vault.keyID == key.keyID)
    _ = try Vault.open(at: dir.file("v"), masterKey: key)
    let files = try everything(dir.file("v"))
    #expect(files.range(of: Data(key.key.withUnsafeBytes { Array($0) })) == nil)
    #expect(files.range(of: Data(hex.utf8)) == nil)
    environment.withLock { $0[name] = "abc" }
    #expect(throws: VaultError.keyProvider("environment variable \(name) is not 64 hex digits")) {
      try Vault.open(at: dir.file("v"), keyProvider: provider)
    }
    environment.withLock { $0[name] = nil }
    #expect(throws: VaultError.keyProvider("environment variable \(name) is not set")) {
      try Vault.open(at: dir.file("v"), keyProvider: provider)
    }
  }

  struct StoreLocked: Error, CustomStringConvertible {
    var description: String { "the keychain is locked" }
  }

  @Test("closure provider: a failing store and a wrong key are clear errors")
  func closureProvider() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let key = try MasterKey.generate()
    _ = try Vault.create(at: dir.file("v"), keyProvider: ClosureKeyProvider { _ in key })
    #expect(throws: VaultError.keyProvider("the keychain is locked")) {
      try Vault.open(
        at: dir.file("v"), keyProvider: ClosureKeyProvider { _ in throw StoreLocked() })
    }
    let other = try MasterKey.generate()
    #expect(
      throws: VaultError.wrongKey(expectedKeyIDs: [key.keyID], actualKeyID: other.keyID)
    ) {
      try Vault.open(at: dir.file("v"), keyProvider: ClosureKeyProvider { _ in other })
    }
  }

  @Test("key file provider, passphrase-protected")
  func keyFileProvider() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let key = try MasterKey.generate()
    try KeyFile.write(
      key, to: dir.file("k"), passphrase: Array("pw".utf8),
      parameters: Scrypt.Parameters(n: 1 << 10, r: 8, p: 1))
    let provider = KeyFileProvider(path: dir.file("k")) { Array("pw".utf8) }
    let vault = try Vault.create(at: dir.file("v"), keyProvider: provider)
    #expect(vault.keyID == key.keyID)
    #expect(throws: VaultError.self) {
      try Vault.open(at: dir.file("v"), keyProvider: KeyFileProvider(path: dir.file("k")))
    }
  }
}
