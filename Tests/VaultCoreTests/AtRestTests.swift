import Foundation
import Testing
import VaultCrypto

@testable import VaultCore

@Suite("No plaintext at rest")
struct AtRestTests {
  @Test("media bytes, names and content types never reach the vault directory")
  func noPlaintext() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let marker = Array("ZEBRA-CANARY-0123456789-PLAINTEXT".utf8)
    var bytes = patternBytes(count: 200_000, seed: 4)
    for offset in stride(from: 0, to: bytes.count - marker.count, by: 5_000) {
      bytes.replaceSubrange(offset..<(offset + marker.count), with: marker)
    }
    let name = "secret-holiday-video-name.mp4"
    let type = "video/x-canary-type"
    try t.importBytes(bytes, name: name, type: type)
    // A pipe import too (the unknown-length path).
    let source = t.directory.file("piped-src")
    try Data(bytes).write(to: URL(fileURLWithPath: source))
    let fd = open(source, O_RDONLY)
    try t.vault.importStream(
      fileDescriptor: fd, sourceName: "stdin", name: name + "-2", contentType: type)
    close(fd)
    // Read it back so any read-side caching would have had its chance to write.
    _ = try t.exportBytes(name)
    let needles = [marker, Array(name.utf8), Array(type.utf8), Array("holiday".utf8)]
    var scanned = 0
    let enumerator = FileManager.default.enumerator(atPath: t.vault.directory)
    while let relative = enumerator?.nextObject() as? String {
      let path = t.vault.directory + "/" + relative
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
        !isDirectory.boolValue
      else {
        #expect(!relative.contains("holiday"))
        continue
      }
      #expect(!relative.contains("holiday"), "file name \(relative) leaks the asset name")
      let data = try Data(contentsOf: URL(fileURLWithPath: path))
      scanned += 1
      for needle in needles {
        #expect(
          data.range(of: Data(needle)) == nil,
          "\(relative) contains \(String(decoding: needle, as: UTF8.self))")
      }
    }
    #expect(scanned >= 3)  // VAULT, index.sqlite, two asset files at least
  }
}

@Suite("Key files")
struct KeyFileTests {
  let cheap = Scrypt.Parameters(n: 1 << 10, r: 8, p: 1)

  @Test("a new key file is mode 0600, reads back, and is never overwritten")
  func plain() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let key = try MasterKey.generate()
    let path = dir.file("k.key")
    try KeyFile.write(key, to: path)
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    #expect((attributes[.posixPermissions] as? Int) == 0o600)
    #expect(try KeyFile.read(at: path).keyID == key.keyID)
    #expect(throws: VaultError.self) { try KeyFile.write(try MasterKey.generate(), to: path) }
    #expect(try KeyFile.read(at: path).keyID == key.keyID)
  }

  @Test("a passphrase-protected key needs the right passphrase")
  func passphrase() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let key = try MasterKey.generate()
    let path = dir.file("p.key")
    try KeyFile.write(key, to: path, passphrase: Array("correct horse".utf8), parameters: cheap)
    let text = try String(contentsOfFile: path, encoding: .utf8)
    #expect(!text.contains(key.key.withUnsafeBytes { Data($0).base64EncodedString() }))
    #expect(
      try KeyFile.read(at: path, passphrase: { Array("correct horse".utf8) }).keyID == key.keyID)
    #expect(throws: VaultError.keyFile(path: path, reason: "wrong passphrase")) {
      try KeyFile.read(at: path, passphrase: { Array("wrong".utf8) })
    }
    #expect(throws: VaultError.passphraseRequired(path: path)) { try KeyFile.read(at: path) }
  }

  @Test("malformed key files are refused with the reason")
  func malformed() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let cases: [(String, String)] = [
      ("hello\n", "not a vault key file"),
      ("vault-key 1\nid 00\n", "missing 'key' line"),
      ("vault-key 1\nid 00\nkey !!!\n", "'key' is not base64"),
      ("vault-key 1\nid 00\nkey AAAA\n", "key must be 32 bytes, found 3"),
    ]
    for (i, (text, reason)) in cases.enumerated() {
      let path = dir.file("bad\(i)")
      try text.write(toFile: path, atomically: true, encoding: .utf8)
      #expect(throws: VaultError.keyFile(path: path, reason: reason)) { try KeyFile.read(at: path) }
    }
    #expect(throws: VaultError.keyFile(path: dir.file("none"), reason: "not found")) {
      try KeyFile.read(at: dir.file("none"))
    }
    // The id line must match the key.
    let key = try MasterKey.generate()
    let path = dir.file("mismatch")
    let encoded = key.key.withUnsafeBytes { Data($0).base64EncodedString() }
    try "vault-key 1\nid 0000000000000000\nkey \(encoded)\n".write(
      toFile: path, atomically: true, encoding: .utf8)
    #expect(throws: VaultError.self) { try KeyFile.read(at: path) }
  }

  @Test("the demo key file has the published id")
  func demo() throws {
    #expect(try demoKey().keyID == "13edc813c83d4a24")
  }
}
