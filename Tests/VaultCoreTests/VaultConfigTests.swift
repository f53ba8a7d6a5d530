import Foundation
import GRDB
import Testing
import VaultCrypto

@testable import VaultCore

/// Every file in a vault directory, concatenated (index, WAL, shared memory, asset files).
func vaultBytes(_ directory: String) throws -> Data {
  var all = Data()
  let enumerator = FileManager.default.enumerator(atPath: directory)
  while let relative = enumerator?.nextObject() as? String {
    var isDirectory: ObjCBool = false
    let path = directory + "/" + relative
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
      !isDirectory.boolValue
    else { continue }
    all += try Data(contentsOf: URL(fileURLWithPath: path))
  }
  return all
}

@Suite("Sealed config and cache keys", .serialized)
struct VaultConfigTests {
  @Test("one file through two CDN hosts and three signed tokens is one asset id")
  func oneAssetAcrossHostsAndTokens() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    try t.vault.updateCacheKeyRules {
      try $0.addAliases(["cdn-a.example.com", "cdn-b.example.com"])
    }
    let urls = [
      "https://cdn-a.example.com/films/intro.mp4?X-Amz-Date=20240101T000000Z&X-Amz-Signature=aa11"
        + "&X-Amz-Credential=AKIA%2F1&quality=hd",
      "https://CDN-B.example.com:443/films/./intro.mp4?quality=hd&token=9f8e7d&exp=1700000000#t=3",
      "https://cdn-b.example.com/films/x/../intro.mp4?hdnts=st%3D1~exp%3D2~hmac%3Dff&quality=hd",
      "https://cdn-a.example.com/films/intro.mp4?Expires=1&Signature=zz&Key-Pair-Id=K1&quality=hd",
    ]
    let keys = try urls.map { try t.vault.assetID(forURLString: $0) }
    #expect(Set(keys.map(\.id)).count == 1)
    #expect(
      keys[0].identity == .url(canonical: "https://cdn-a.example.com/films/intro.mp4?quality=hd"))
    // The same through Foundation URLs.
    let viaURL = try t.vault.assetID(forURL: try #require(URL(string: urls[1])))
    #expect(viaURL.id == keys[0].id)
    // A different quality, path or host outside the group is another asset.
    for other in [
      "https://cdn-a.example.com/films/intro.mp4?quality=sd",
      "https://cdn-a.example.com/films/Intro.mp4?quality=hd",
      "https://cdn-c.example.com/films/intro.mp4?quality=hd",
      "http://cdn-a.example.com/films/intro.mp4?quality=hd",
    ] {
      #expect(try t.vault.assetID(forURLString: other).id != keys[0].id, "\(other)")
    }
  }

  @Test("content ids override the URL; different content ids give different ids")
  func contentIDs() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let url = "https://cdn.example.com/v.mp4"
    let a = try t.vault.assetID(forURLString: url, contentID: "episode-1")
    let b = try t.vault.assetID(forURLString: url, contentID: "episode-2")
    let c = try t.vault.assetID(forURLString: "https://other.example.org/z", contentID: "episode-1")
    let byURL = try t.vault.assetID(forURLString: url)
    #expect(a.id != b.id)
    #expect(a.id == c.id)
    #expect(a.id != byURL.id)
    #expect(a.identity == .contentID("episode-1"))
    // An imported asset named like the content id is the same asset, and is found as stored.
    try t.importBytes(patternBytes(count: 100, seed: 9), name: "episode-1")
    #expect(try t.vault.hasAsset(a.id))
    #expect(try t.vault.hasAsset(byURL.id) == false)
  }

  @Test("the id is keyed: not the URL, the host, or a plain SHA-256 of them")
  func idIsKeyed() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let url = "https://secret-cdn.example.com/private/clip.mp4"
    let key = try t.vault.assetID(forURLString: url)
    let canonical = "https://secret-cdn.example.com/private/clip.mp4"
    #expect(key.identity.canonical == "url:" + canonical)
    let hex = key.id.hex
    #expect(!hex.contains("secret"))
    for text in [
      url, canonical, "url:" + canonical, "secret-cdn.example.com",
      "vault v1 asset id\0url:" + canonical,
    ] {
      #expect(try SHA256.hash(Array(text.utf8)) != key.id.bytes, "\(text)")
      #expect(Bytes.hex(Array(text.utf8)) != hex)
    }
    // A different naming key (another vault, same master key) gives a different id.
    let other = try TestVault()
    defer { other.cleanup() }
    #expect(try other.vault.assetID(forURLString: url).id != key.id)
    // The id is the documented HMAC.
    var message = Array("vault v1 asset id".utf8)
    message.append(0)
    message += Array(key.identity.canonical.utf8)
    #expect(try HMACSHA256.authenticationCode(for: message, key: t.vault.namingKey) == key.id.bytes)
  }

  @Test("rules are stored sealed: no host or parameter name appears in the vault files")
  func rulesSealedAtRest() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let hosts = ["zebra-canary-edge.example.com", "okapi-canary-mirror.example.net"]
    try t.vault.updateCacheKeyRules {
      try $0.addAliases(hosts)
      try $0.addVolatileParameter("quokka_canary_param")
    }
    // Reopen (another process would see the same), then fold the WAL into the main file.
    let reopened = try Vault.open(at: t.vault.directory, masterKey: try demoKey())
    #expect(try reopened.cacheKeyRules().aliasGroups.first?.hosts == hosts)
    #expect(try reopened.cacheKeyRules().isVolatile("QUOKKA_CANARY_PARAM"))
    try reopened.index.checkpoint()
    let bytes = try vaultBytes(t.vault.directory)
    // The search works: the config key name is stored in clear and is found.
    #expect(bytes.range(of: Data("cacheKeyRules".utf8)) != nil)
    for needle in hosts + ["canary", "zebra", "okapi", "quokka", "example.com", "X-Amz"] {
      #expect(bytes.range(of: Data(needle.utf8)) == nil, "vault files contain \(needle)")
    }
    // The sealed value is padded: its length is a multiple of 256 plus the 28-byte overhead.
    let sealed = try #require(try t.vault.index.configValue("cacheKeyRules"))
    #expect((sealed.count - 28) % Vault.configPadding == 0)
  }

  @Test("a config value moved to another key, or changed, is refused")
  func movedValueRefused() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let other = VaultConfigKey<CacheKeyRules>("otherRules")
    var rules = CacheKeyRules.default
    try rules.addAliases(["a.example.com", "b.example.com"])
    try t.vault.setCacheKeyRules(rules)
    #expect(try t.vault.cacheKeyRules() == rules)
    #expect(try t.vault.config(other) == nil)
    try tamperIndex(
      t.vault.directory, "INSERT INTO config (key, value) SELECT 'otherRules', value FROM config")
    #expect {
      try t.vault.config(other)
    } throws: { error in
      guard case VaultError.indexDamaged(let reason) = error else { return false }
      return reason.contains("otherRules") && reason.contains("authentication")
    }
    // The original still opens; a flipped bit does not.
    #expect(try t.vault.cacheKeyRules() == rules)
    var flipped = try #require(try t.vault.index.configValue("cacheKeyRules"))
    flipped[40] ^= 0x01
    try tamperIndex(
      t.vault.directory, "UPDATE config SET value = ? WHERE key = 'cacheKeyRules'", [flipped])
    #expect(throws: VaultError.self) { try t.vault.cacheKeyRules() }
    // Deleting the row falls back to the defaults (documented: deletion is not detected).
    try tamperIndex(t.vault.directory, "DELETE FROM config WHERE key = 'cacheKeyRules'")
    #expect(try t.vault.cacheKeyRules() == .default)
  }

  @Test("typed settings: set, read, update, delete; key names are checked")
  func typedSettings() throws {
    let t = try TestVault()
    defer { t.cleanup() }
    let maxBytes = VaultConfigKey<Int64>("maxBytes")
    #expect(try t.vault.config(maxBytes) == nil)
    try t.vault.setConfig(maxBytes, to: 5_000_000_000)
    #expect(try t.vault.config(maxBytes) == 5_000_000_000)
    let updated = try t.vault.updateConfig(maxBytes, default: 0) { $0 += 1 }
    #expect(updated == 5_000_000_001)
    #expect(try t.vault.config(maxBytes) == 5_000_000_001)
    try t.vault.setConfig(maxBytes, to: nil)
    #expect(try t.vault.config(maxBytes) == nil)
    // A failing update stores nothing.
    struct Stop: Error {}
    #expect(throws: Stop.self) {
      try t.vault.updateConfig(maxBytes, default: 7) { _ in throw Stop() }
    }
    #expect(try t.vault.config(maxBytes) == nil)
    // A value of the wrong type under a key is malformed, not a crash.
    try t.vault.setConfig(VaultConfigKey<String>("maxBytes"), to: "lots")
    #expect(throws: VaultError.self) { try t.vault.config(maxBytes) }
    for bad in ["", "has space", String(repeating: "k", count: 65), "caf\u{E9}"] {
      #expect(throws: VaultError.self, "\(bad)") {
        try t.vault.setConfig(VaultConfigKey<Int64>(bad), to: 1)
      }
    }
    // Invalid rules are refused before anything is stored.
    let invalid = CacheKeyRules(volatileParameters: ["*"])
    #expect(throws: VaultError.self) { try t.vault.setCacheKeyRules(invalid) }
    #expect(throws: VaultError.self) {
      try t.vault.updateCacheKeyRules { $0.volatileParameters.append("a=b") }
    }
    #expect(try t.vault.cacheKeyRules() == .default)
  }

  @Test("known answers: config key, config AAD, URL asset id (FORMAT.md §10)")
  func knownAnswers() throws {
    let namingKey = SymmetricKey(bytes: Array(0..<32) as [UInt8])
    let configKey = try Vault.configKey(namingKey: namingKey)
    #expect(
      configKey.withUnsafeBytes { Bytes.hex($0) }
        == "d71bcac5201d0d3ed6156ff1fe9206c63943517942118c94f651978a76e78d5b")
    #expect(
      Bytes.hex(Vault.configAAD(name: "cacheKeyRules"))
        == "7661756c7420763120636f6e6669670063616368654b657952756c6573")
    let identity = try URLCanonicalizer.identity(
      urlString: "https://CDN-B.example.com/films/intro.mp4?token=x&quality=hd", contentID: nil,
      rules: aliasRules)
    #expect(
      try AssetID.derive(identity: identity, namingKey: namingKey).hex
        == "062d059cc3a5d8cf06f901f7af3fdf3c0a1ddba1d0b23882330990a9a7c4d8b9")
  }

  @Test("the committed v1 fixture vault migrates on open and keeps working")
  func fixtureMigrates() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let copy = dir.file("vault")
    try FileManager.default.copyItem(atPath: fixturesDirectory + "/vault-v1", toPath: copy)
    let before = try DatabaseQueue(path: copy + "/index.sqlite")
    let hadConfig = try before.read { try $0.tableExists("config") }
    try before.close()
    #expect(!hadConfig, "the fixture must be a vault from before the config table")
    let vault = try Vault.open(at: copy, masterKey: try demoKey())
    let applied = try vault.index.database.read {
      try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
    }
    #expect(applied == ["v1", "v2-config", "v3-counters", "v3-keys", "v4-leases"])
    #expect(try vault.cacheKeyRules() == .default)
    try vault.updateCacheKeyRules { try $0.addAliases(["a.example.com", "b.example.com"]) }
    let reopened = try Vault.open(at: copy, masterKey: try demoKey())
    #expect(try reopened.cacheKeyRules().canonicalHost(for: "b.example.com") == "a.example.com")
    #expect(try reopened.list().count == 4)
    #expect(try reopened.verify().allSatisfy(\.ok))
    let id = try reopened.resolve("fixture-a.bin")
    #expect(
      try reopened.reader(for: id).read(offset: 0, count: 40_000)
        == patternBytes(count: 40_000, seed: 1))
    #expect(try reopened.assetID(forURLString: "https://x/", contentID: "fixture-a.bin").id == id)
  }
}
