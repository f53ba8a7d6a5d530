import Foundation
import Testing

@testable import VaultCore

/// One canonicalisation case: input URL, expected canonical form, and why.
struct CanonicalCase: CustomTestStringConvertible, Sendable {
  let input: String
  let expected: String
  let why: String
  var testDescription: String { why }
}

/// Rules with one alias group, used by the alias rows of the table.
let aliasRules: CacheKeyRules = {
  var rules = CacheKeyRules.default
  rules.aliasGroups = [
    HostAliasGroup(
      canonical: "cdn-a.example.com", members: ["cdn-b.example.com", "CDN-C.Example.COM"])
  ]
  return rules
}()

@Suite("URL canonicalisation")
struct URLCanonicalizerTests {
  static let cases: [CanonicalCase] = [
    // Case
    .init(
      input: "HTTPS://Media.Example.COM/Path/File.MP4",
      expected: "https://media.example.com/Path/File.MP4",
      why: "scheme and host lower-cased, path case kept"),
    .init(
      input: "http://example.com", expected: "http://example.com/", why: "empty path becomes /"),
    .init(
      input: "http://example.com?b=1&a=2", expected: "http://example.com/?a=2&b=1",
      why: "query without a path"),
    // Ports
    .init(
      input: "http://example.com:80/a", expected: "http://example.com/a",
      why: "http default port dropped"),
    .init(
      input: "https://example.com:443/a", expected: "https://example.com/a",
      why: "https default port dropped"),
    .init(
      input: "http://example.com:443/a", expected: "http://example.com:443/a",
      why: "443 is not http's default: kept"),
    .init(
      input: "https://example.com:0443/a", expected: "https://example.com/a",
      why: "leading zeros in port"),
    .init(
      input: "http://example.com:/a", expected: "http://example.com/a", why: "empty port dropped"),
    .init(
      input: "https://example.com:8443/a", expected: "https://example.com:8443/a",
      why: "other port kept"),
    // Fragment and userinfo
    .init(
      input: "https://example.com/v.mp4#t=10", expected: "https://example.com/v.mp4",
      why: "fragment dropped"),
    .init(
      input: "https://example.com/v.mp4?q=1#frag?x=2&y", expected: "https://example.com/v.mp4?q=1",
      why: "fragment after query dropped"),
    .init(
      input: "https://user:pa%3Ass@example.com/v.mp4", expected: "https://example.com/v.mp4",
      why: "userinfo dropped"),
    // Dot segments
    .init(
      input: "https://example.com/a/b/../c/./d.mp4", expected: "https://example.com/a/c/d.mp4",
      why: "dot segments resolved"),
    .init(
      input: "https://example.com/../../a", expected: "https://example.com/a",
      why: ".. above the root stays at root"),
    .init(
      input: "https://example.com/a/%2E%2E/b", expected: "https://example.com/b",
      why: "encoded dot segments resolved after decoding"),
    .init(
      input: "https://example.com/a/.", expected: "https://example.com/a/",
      why: "trailing /. becomes /"),
    // Percent-encoding
    .init(
      input: "https://example.com/%7Euser/%41%62c%2d%5F.mp4",
      expected: "https://example.com/~user/Abc-_.mp4",
      why: "escapes of unreserved characters decoded"),
    .init(
      input: "https://example.com/a%2fb%3f", expected: "https://example.com/a%2Fb%3F",
      why: "reserved escapes kept, hex upper-cased"),
    .init(
      input: "https://example.com/my file[1].mp4",
      expected: "https://example.com/my%20file%5B1%5D.mp4",
      why: "space and brackets encoded"),
    .init(
      input: "https://example.com/caf\u{E9}.mp4", expected: "https://example.com/caf%C3%A9.mp4",
      why: "non-ASCII encoded as UTF-8"),
    .init(
      input: "https://example.com/100%.mp4?p=50%",
      expected: "https://example.com/100%25.mp4?p=50%25",
      why: "stray % encoded"),
    .init(
      input: "https://example.com/a?x=%7e%2b+y", expected: "https://example.com/a?x=~%2B+y",
      why: "query escapes normalised, + kept literal"),
    // Query
    .init(
      input: "https://example.com/a?b=2&a=1&c=3", expected: "https://example.com/a?a=1&b=2&c=3",
      why: "parameters sorted by name"),
    .init(
      input: "https://example.com/a?a=2&a=10&a=1", expected: "https://example.com/a?a=1&a=10&a=2",
      why: "duplicate names sorted by value, byte-wise"),
    .init(
      input: "https://example.com/a?a=1&a=1", expected: "https://example.com/a?a=1&a=1",
      why: "exact duplicates kept"),
    .init(
      input: "https://example.com/a?b&a=&a", expected: "https://example.com/a?a&a=&b",
      why: "a parameter without = sorts before an empty value"),
    .init(
      input: "https://example.com/a?&&x=1&", expected: "https://example.com/a?x=1",
      why: "empty pieces dropped"),
    .init(
      input: "https://example.com/a?", expected: "https://example.com/a",
      why: "empty query leaves no ?"),
    .init(
      input: "https://example.com/a?id=7&v=2&quality=hd",
      expected: "https://example.com/a?id=7&quality=hd&v=2",
      why: "ordinary parameters id, v, quality kept"),
    .init(
      input: "https://example.com/a?eq=a=b", expected: "https://example.com/a?eq=a=b",
      why: "= inside a value kept"),
    // Volatile parameters
    .init(
      input:
        "https://bucket.s3.amazonaws.com/v.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F2024"
        + "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
        + "&X-Amz-Signature=abc&X-Amz-Security-Token=tok&part=2",
      expected: "https://bucket.s3.amazonaws.com/v.mp4?part=2", why: "X-Amz-* prefix dropped"),
    .init(
      input: "https://b.s3.amazonaws.com/v.mp4?x-amz-signature=1&X-AMZ-DATE=2",
      expected: "https://b.s3.amazonaws.com/v.mp4", why: "X-Amz-* matched case-insensitively"),
    .init(
      input: "https://b.s3.amazonaws.com/v.mp4?AWSAccessKeyId=AK&Expires=1700000000&Signature=s%2B",
      expected: "https://b.s3.amazonaws.com/v.mp4",
      why: "S3 SigV2 AWSAccessKeyId, Expires, Signature"),
    .init(
      input:
        "https://storage.googleapis.com/b/v.mp4?X-Goog-Algorithm=a&X-Goog-Signature=s&X-Goog-Date=d",
      expected: "https://storage.googleapis.com/b/v.mp4", why: "X-Goog-* prefix dropped"),
    .init(
      input: "https://storage.googleapis.com/b/v.mp4?GoogleAccessId=x&Expires=1&Signature=s",
      expected: "https://storage.googleapis.com/b/v.mp4", why: "GCS V2 GoogleAccessId"),
    .init(
      input: "https://d111.cloudfront.net/v.mp4?Expires=1&Signature=s&Key-Pair-Id=K&Policy=p",
      expected: "https://d111.cloudfront.net/v.mp4",
      why: "CloudFront Expires, Signature, Key-Pair-Id, Policy"),
    .init(
      input: "https://cdn.example.com/v.mp4?Expires=1&KeyName=k&Signature=s",
      expected: "https://cdn.example.com/v.mp4", why: "Cloud CDN KeyName"),
    .init(
      input: "https://a.akamaized.net/v.mp4?hdnts=exp%3D1~acl%3D%2F*~hmac%3Dab&hdnea=x&__gda__=1_2",
      expected: "https://a.akamaized.net/v.mp4", why: "Akamai hdnts, hdnea, __gda__"),
    .init(
      input: "https://cdn.example.com/v.mp4?token=abc&TOKEN=def&auth=1&exp=2&auth_key=3-0-0-h",
      expected: "https://cdn.example.com/v.mp4", why: "generic token, auth, exp, auth_key, any case"
    ),
    .init(
      input:
        "https://acct.blob.core.windows.net/c/v.mp4?sv=2022-11-02&ss=b&srt=o&sp=r&se=2024-01-01T00%3A00%3A00Z"
        + "&st=2023-12-31&spr=https&sip=1.2.3.4&si=pol&sr=b&sig=abc%3D",
      expected: "https://acct.blob.core.windows.net/c/v.mp4",
      why: "Azure SAS sv ss srt sp se st spr sip si sr sig"),
    .init(
      input:
        "https://acct.blob.core.windows.net/c/v.mp4?skoid=1&sktid=2&skt=3&ske=4&sks=b&skv=5&sig=6",
      expected: "https://acct.blob.core.windows.net/c/v.mp4",
      why: "Azure user-delegation SAS fields"),
    .init(
      input: "https://cdn.example.com/v.mp4?%74oken=abc&X%2DAmz-Date=1&keep=1",
      expected: "https://cdn.example.com/v.mp4?keep=1", why: "volatile names matched after decoding"
    ),
    .init(
      input: "https://cdn.example.com/v.mp4?tokens=1&expires_in=2&signatures=3&amz=4",
      expected: "https://cdn.example.com/v.mp4?amz=4&expires_in=2&signatures=3&tokens=1",
      why: "exact names do not match longer names"),
    // Hosts
    .init(
      input: "https://CDN-B.example.com/v.mp4", expected: "https://cdn-a.example.com/v.mp4",
      why: "alias member mapped to canonical"),
    .init(
      input: "https://cdn-c.example.com:8443/v.mp4",
      expected: "https://cdn-a.example.com:8443/v.mp4",
      why: "alias member (declared in upper case) mapped, port kept"),
    .init(
      input: "https://cdn-d.example.com/v.mp4", expected: "https://cdn-d.example.com/v.mp4",
      why: "host outside the group unchanged"),
    .init(
      input: "http://[2001:DB8:0:0:0:0:0:1]:80/v.mp4", expected: "http://[2001:db8::1]/v.mp4",
      why: "IPv6 host in RFC 5952 form, default port dropped"),
    .init(
      input: "https://[::FFFF:192.0.2.1]:8443/v", expected: "https://[::ffff:192.0.2.1]:8443/v",
      why: "IPv4-mapped IPv6 host"),
    .init(
      input: "https://%65xample.COM/v", expected: "https://example.com/v",
      why: "host escapes decoded"),
    .init(
      input: "  https://example.com/v \n", expected: "https://example.com/v",
      why: "surrounding whitespace"),
    .init(
      input: "https://127.0.0.1:8080/v", expected: "https://127.0.0.1:8080/v", why: "IPv4 host"),
  ]

  @Test("canonical forms", arguments: cases)
  func canonicalForm(_ row: CanonicalCase) throws {
    #expect(try URLCanonicalizer.canonical(urlString: row.input, rules: aliasRules) == row.expected)
  }

  @Test("the table is large enough and canonical forms are fixed points")
  func fixedPoints() throws {
    #expect(Self.cases.count >= 25)
    for row in Self.cases {
      let once = try URLCanonicalizer.canonical(urlString: row.input, rules: aliasRules)
      #expect(
        try URLCanonicalizer.canonical(urlString: once, rules: aliasRules) == once, "\(row.why)")
    }
  }

  @Test("Foundation URLs give the same canonical form as their text")
  func foundationURL() throws {
    let text = "HTTPS://Example.com:443/a/../b%7e.mp4?z=1&X-Amz-Date=2&a=2#f"
    let url = try #require(URL(string: text))
    #expect(
      try URLCanonicalizer.canonical(url: url, rules: .default)
        == "https://example.com/b~.mp4?a=2&z=1")
  }

  static let refused: [(String, String)] = [
    ("ftp://example.com/v.mp4", "only http and https"),
    ("file:///etc/passwd", "only http and https"),
    ("data:text/plain,hello", "only http and https"),
    ("example.com/v.mp4", "no scheme"),
    ("/v.mp4", "no scheme"),
    ("http:v.mp4", "no host"),
    ("https:///v.mp4", "no host"),
    ("https://user@/v.mp4", "no host"),
    ("https://example.com:99999/v", "invalid port"),
    ("https://example.com:8o/v", "invalid port"),
    ("https://[2001:db8::zz]/v", "invalid IPv6"),
    ("https://[2001:db8::1/v", "unterminated IPv6"),
    ("https://[fe80::1%25eth0]/v", "invalid IPv6"),
    ("https://example.com\\evil.example/v", "invalid characters"),
    ("https://exa mple.com/v", "invalid characters"),
    ("https://b\u{FC}cher.de/v", "punycode"),
  ]

  @Test("non-http(s) URLs and URLs without a valid host are refused", arguments: refused)
  func refusals(_ input: String, _ fragment: String) {
    #expect {
      try URLCanonicalizer.canonical(urlString: input, rules: .default)
    } throws: { error in
      guard case VaultError.invalidArgument(let message) = error else { return false }
      return message.contains(fragment)
    }
  }

  @Test("an explicit content id overrides the URL completely")
  func contentIDOverrides() throws {
    let a = try URLCanonicalizer.identity(
      urlString: "https://a.example.com/x.mp4", contentID: "episode-42", rules: .default)
    let b = try URLCanonicalizer.identity(
      urlString: "ftp://not-even-http/", contentID: "episode-42", rules: .default)
    #expect(a == .contentID("episode-42"))
    #expect(a == b)
    let byURL = try URLCanonicalizer.identity(
      urlString: "https://A.example.com/x.mp4", contentID: nil, rules: .default)
    #expect(byURL == .url(canonical: "https://a.example.com/x.mp4"))
    #expect(byURL.canonical == "url:https://a.example.com/x.mp4")
    #expect(throws: VaultError.invalidArgument("the content id is empty")) {
      try URLCanonicalizer.identity(urlString: "https://a/", contentID: "", rules: .default)
    }
  }
}

@Suite("URL canonicalisation: custom rules")
struct CustomRulesCanonicalTests {
  @Test("a non-ASCII volatile name matches its percent-encoded form")
  func encodedVolatileName() throws {
    var rules = CacheKeyRules.default
    try rules.addVolatileParameter("cl\u{E9}")
    try rules.addVolatileParameter("Sess*")
    #expect(
      try URLCanonicalizer.canonical(
        urlString: "https://e.example/v?CL%C3%A9=1&x=1&session_id=4&SESSION=5&sess=6", rules: rules)
        == "https://e.example/v?x=1")
    #expect(
      try URLCanonicalizer.canonical(urlString: "https://e.example/v?cl%C3%A9=1", rules: .default)
        == "https://e.example/v?cl%C3%A9=1")
  }
}
