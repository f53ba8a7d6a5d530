import Foundation
import Testing

@testable import VaultCore

@Suite("Cache-key rules")
struct CacheKeyRulesTests {
  @Test("the default volatile list drops credentials and keeps ordinary parameters")
  func defaults() {
    let rules = CacheKeyRules.default
    for name in [
      "X-Amz-Signature", "x-amz-credential", "X-Goog-Signature", "Expires", "expires", "Signature",
      "Key-Pair-Id", "Policy", "token", "Token", "hdnts", "hdnea", "exp", "__gda__", "auth", "sig",
      "se", "sp", "sv", "sr", "st", "AWSAccessKeyId", "GoogleAccessId", "KeyName", "auth_key",
    ] {
      #expect(rules.isVolatile(name), "\(name) should be volatile")
    }
    for name in [
      "id", "v", "quality", "start", "end", "t", "format", "lang", "bitrate", "res", "track",
      "expiry_note", "tokenizer", "signed", "amz", "X-Amz", "s", "e", "p",
    ] {
      #expect(!rules.isVolatile(name), "\(name) must be kept")
    }
    #expect(rules.aliasGroups.isEmpty)
  }

  @Test("volatile patterns: add, dedupe ignoring case, remove, refuse bad ones")
  func editVolatile() throws {
    var rules = CacheKeyRules.default
    #expect(try rules.addVolatileParameter("session"))
    #expect(try rules.addVolatileParameter("SESSION") == false)
    #expect(try rules.addVolatileParameter("X-Cdn-*"))
    #expect(rules.isVolatile("x-cdn-anything"))
    #expect(rules.isVolatile("Session"))
    try rules.removeVolatileParameter("x-amz-*")
    #expect(!rules.isVolatile("X-Amz-Date"))
    #expect(throws: VaultError.self) { try rules.removeVolatileParameter("not-listed") }
    for bad in ["", "*", "a*b", "a=b", "a&b", "a b", "a#", "a?"] {
      #expect(throws: VaultError.self, "\(bad)") { try rules.addVolatileParameter(bad) }
    }
  }

  @Test("alias groups: create, extend, refuse overlap, remove and promote")
  func editAliases() throws {
    var rules = CacheKeyRules.default
    let group = try rules.addAliases([
      "CDN-A.example.com", "cdn-b.example.com", "cdn-a.example.com",
    ])
    #expect(group == HostAliasGroup(canonical: "cdn-a.example.com", members: ["cdn-b.example.com"]))
    try rules.addAliases(["cdn-c.example.com", "cdn-b.example.com"])
    #expect(rules.aliasGroups.count == 1)
    #expect(
      rules.aliasGroups[0].hosts == ["cdn-a.example.com", "cdn-b.example.com", "cdn-c.example.com"])
    #expect(rules.canonicalHost(for: "CDN-C.EXAMPLE.COM") == "cdn-a.example.com")
    try rules.addAliases(["x.example.net", "y.example.net"])
    #expect(throws: VaultError.self) {
      try rules.addAliases(["cdn-a.example.com", "x.example.net"])
    }
    #expect(throws: VaultError.self) { try rules.addAliases(["solo.example.com"]) }
    #expect(throws: VaultError.self) { try rules.addAliases(["a.example.com", "bad/host"]) }
    try rules.removeAlias("cdn-a.example.com")
    #expect(rules.canonicalHost(for: "cdn-c.example.com") == "cdn-b.example.com")
    #expect(rules.canonicalHost(for: "cdn-a.example.com") == "cdn-a.example.com")
    try rules.removeAlias("y.example.net")
    #expect(rules.aliasGroups.count == 1)
    #expect(throws: VaultError.self) { try rules.removeAlias("x.example.net") }
    try rules.validate()
  }

  @Test("hosts given in another spelling still match (case, IPv6 form)")
  func hostSpellings() throws {
    let rules = CacheKeyRules(
      volatileParameters: [],
      aliasGroups: [
        HostAliasGroup(canonical: "[2001:DB8:0:0::1]", members: ["Mirror.Example.COM"])
      ])
    #expect(rules.canonicalHost(for: "mirror.example.com") == "[2001:db8::1]")
    #expect(
      try URLCanonicalizer.canonical(urlString: "http://[2001:db8::1]/a", rules: rules)
        == "http://[2001:db8::1]/a")
    #expect(
      try URLCanonicalizer.canonical(urlString: "http://MIRROR.example.com/a", rules: rules)
        == "http://[2001:db8::1]/a")
  }

  @Test("validate refuses a host in two groups and a group of one")
  func validation() {
    let twice = CacheKeyRules(
      volatileParameters: [],
      aliasGroups: [
        HostAliasGroup(canonical: "a.example", members: ["b.example"]),
        HostAliasGroup(canonical: "c.example", members: ["B.example"]),
      ])
    #expect(throws: VaultError.self) { try twice.validate() }
    let lonely = CacheKeyRules(
      volatileParameters: [], aliasGroups: [HostAliasGroup(canonical: "a.example", members: [])])
    #expect(throws: VaultError.self) { try lonely.validate() }
  }

  @Test("JSON round trip; missing fields take their defaults")
  func codable() throws {
    var rules = CacheKeyRules.default
    try rules.addAliases(["a.example", "b.example"])
    let data = try JSONEncoder().encode(rules)
    #expect(try JSONDecoder().decode(CacheKeyRules.self, from: data) == rules)
    #expect(try JSONDecoder().decode(CacheKeyRules.self, from: Data("{}".utf8)) == .default)
  }
}
