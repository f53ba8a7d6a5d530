import Foundation
import LoopbackOrigin
import Testing
import VaultServer

/// RFC 9110 behaviour and the security checks, driven with curl.
@Suite(
  "HTTP semantics (curl)",
  .enabled(if: ProcessRunner.hasCurl, "curl is not installed (scripts/install-deps --test)"))
struct HTTPSemanticsTests {
  static let size = 300_000
  let source = media(HTTPSemanticsTests.size, seed: 7)

  func withServer(
    corsOrigin: String? = nil, _ body: (ServerFixture, URL) async throws -> Void
  ) async throws {
    let f = try await ServerFixture.start(corsOrigin: corsOrigin)
    do {
      try f.importAsset("clip.mp4", source)
      try await body(f, f.server.url(forAsset: "clip.mp4"))
    } catch {
      await f.stop()
      throw error
    }
    await f.stop()
  }

  @Test func fullGetAndHead() async throws {
    try await withServer { _, url in
      let full = try await Curl.get(url)
      #expect(full.status == 200)
      #expect(full.body == source)
      #expect(full.headers["content-length"] == "\(source.count)")
      #expect(full.headers["content-type"] == "video/mp4")
      #expect(full.headers["accept-ranges"] == "bytes")
      let etag = try #require(full.headers["etag"])
      #expect(etag.hasPrefix("\"") && !etag.hasPrefix("W/"))
      #expect(full.headers["access-control-allow-origin"] == nil)
      let head = try await Curl.get(url, ["-I"])
      #expect(head.status == 200)
      // curl -I writes the response head as its output: no body bytes follow it.
      #expect(head.body.count < 1000)
      #expect(head.headers["content-length"] == "\(source.count)")
      #expect(head.headers["etag"] == etag)
    }
  }

  @Test func rangeForms() async throws {
    try await withServer { _, url in
      let n = source.count
      let cases: [(String, Int, Int)] = [
        ("bytes=100-16483", 100, 16483), ("bytes=299000-", 299_000, n - 1),
        ("bytes=-1000", n - 1000, n - 1), ("bytes=0-0", 0, 0),
        ("bytes=250000-999999999", 250_000, n - 1), ("bytes=-999999", 0, n - 1),
        // Multi-range: the first satisfiable range, as one 206 part.
        ("bytes=500-599, 700-799", 500, 599), ("bytes=900000-, 10-19", 10, 19),
      ]
      for (header, start, end) in cases {
        let response = try await Curl.get(url, ["-H", "Range: \(header)"])
        #expect(response.status == 206, "\(header)")
        #expect(response.headers["content-range"] == "bytes \(start)-\(end)/\(n)", "\(header)")
        #expect(response.headers["content-length"] == "\(end - start + 1)", "\(header)")
        #expect(response.body == Array(source[start...end]), "\(header)")
      }
      let head = try await Curl.get(url, ["-I", "-H", "Range: bytes=10-19"])
      #expect(head.status == 206 && head.body.count < 1000)
      #expect(head.headers["content-range"] == "bytes 10-19/\(n)")
    }
  }

  @Test func unsatisfiableAndMalformedRanges() async throws {
    try await withServer { _, url in
      for header in ["bytes=300000-", "bytes=400000-500000", "bytes=-0"] {
        let response = try await Curl.get(url, ["-H", "Range: \(header)"])
        #expect(response.status == 416, "\(header)")
        #expect(response.headers["content-range"] == "bytes */\(source.count)", "\(header)")
      }
      for header in ["bytes=5-1", "bytes=abc", "items=0-10", "bytes=1-2-3", "bytes=", "bytes=--5"] {
        let response = try await Curl.get(url, ["-H", "Range: \(header)"])
        #expect(response.status == 200, "\(header)")
        #expect(response.body == source, "\(header)")
      }
    }
  }

  @Test func ifRange() async throws {
    try await withServer { _, url in
      let etag = try #require(try await Curl.get(url, ["-I"]).headers["etag"])
      let match = try await Curl.get(url, ["-H", "Range: bytes=10-19", "-H", "If-Range: \(etag)"])
      #expect(match.status == 206)
      #expect(match.body == Array(source[10...19]))
      for stale in ["\"0123abcd\"", "W/\(etag)", "Sun, 06 Nov 1994 08:49:37 GMT"] {
        let response = try await Curl.get(
          url, ["-H", "Range: bytes=10-19", "-H", "If-Range: \(stale)"])
        #expect(response.status == 200, "\(stale)")
        #expect(response.body == source, "\(stale)")
      }
    }
  }

  @Test func tokenHostAndRoutes() async throws {
    try await withServer { f, url in
      let base = f.server.baseURL.absoluteString
      let token = f.server.baseURL.pathComponents[1]
      #expect(token.count >= 22)
      let wrong = base.replacingOccurrences(of: token, with: String(token.reversed()))
      let short = base.replacingOccurrences(of: token + "/", with: "")
      for bad in [
        wrong + "assets/clip.mp4", short + "assets/clip.mp4", base, base + "assets/",
        base + "assets/nope.mp4", base + "stream", base + "stream?url=file%3A%2F%2F%2Fetc%2Fpasswd",
      ] {
        let response = try await Curl.get(try #require(URL(string: bad)))
        #expect(response.status == 404, "\(bad)")
        #expect(!String(decoding: response.body, as: UTF8.self).contains("clip.mp4"))
      }
      for host in ["evil.example", "127.0.0.1.evil.example", "192.168.1.10:8080", "[::2]"] {
        let response = try await Curl.get(url, ["-H", "Host: \(host)"])
        #expect(response.status == 403, "\(host)")
      }
      for host in [
        "localhost:\(f.server.port)", "127.0.0.1", "127.1.2.3:99", "[::1]:\(f.server.port)",
      ] {
        let response = try await Curl.get(url, ["-H", "Host: \(host)", "-r", "0-9"])
        #expect(response.status == 206, "\(host)")
      }
      let post = try await Curl.get(url, ["-X", "POST"])
      #expect(post.status == 405)
      #expect(post.headers["allow"] == "GET, HEAD")
    }
  }

  @Test func keepAliveServesTwoRequestsOnOneConnection() async throws {
    try await withServer { _, url in
      let result = try await ProcessRunner.run(
        "curl",
        [
          "-s", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
          "-r", "0-99", url.absoluteString, url.absoluteString,
        ])
      let lines = result.text.split(separator: "\n")
      #expect(lines == ["206 1", "206 0"], "\(result.text)")
    }
  }

  @Test func corsOnlyWhenAskedForAndOnlyThatOrigin() async throws {
    try await withServer(corsOrigin: "http://localhost:3000") { _, url in
      let response = try await Curl.get(url, ["-r", "0-9", "-H", "Origin: http://localhost:3000"])
      #expect(response.headers["access-control-allow-origin"] == "http://localhost:3000")
      let preflight = try await Curl.get(
        url, ["-X", "OPTIONS", "-H", "Origin: http://localhost:3000"])
      #expect(preflight.status == 204)
      #expect(preflight.headers["access-control-allow-methods"] == "GET, HEAD")
    }
  }

  @Test func streamRouteAndErrorStatuses() async throws {
    try await withServer { f, _ in
      f.origin.serve("/song.mp3", bytes: source, contentType: "audio/mpeg")
      let url = f.server.url(forOrigin: f.origin.url("/song.mp3?X-Amz-Signature=abc"))
      let part = try await Curl.get(url, ["-r", "20000-40000"])
      #expect(part.status == 206)
      #expect(part.headers["content-type"] == "audio/mpeg")
      #expect(part.body == Array(source[20000...40000]))
      let full = try await Curl.get(url)
      #expect(full.status == 200 && full.body == source)
      // An origin that is not there: 502 with a reason.
      let dead = try LoopbackOrigin()
      let deadURL = dead.url("/gone.mp4")
      dead.stop()
      let unreachable = try await Curl.get(f.server.url(forOrigin: deadURL))
      #expect(unreachable.status == 502)
      #expect(unreachable.headers["x-vault-error"] != nil)
      let missing = try await Curl.get(f.server.url(forOrigin: f.origin.url("/missing.mp4")))
      #expect(missing.status == 404)
    }
  }

  /// A chunk changed on disk is refused: 500 with a reason, never its bytes; other ranges
  /// of the asset are still served.
  @Test func damagedChunkIs500() async throws {
    try await withServer { f, url in
      let id = try f.vault.resolve("clip.mp4").hex
      let chunks = f.directory + "/vault/chunks/" + String(id.prefix(2))
      let name = try #require(
        try FileManager.default.contentsOfDirectory(atPath: chunks).first { $0.hasPrefix(id) })
      let handle = try #require(FileHandle(forUpdatingAtPath: chunks + "/" + name))
      let size = try handle.seekToEnd()
      try handle.seek(toOffset: size / 2)
      let byte = try #require(try handle.read(upToCount: 1)?.first)
      try handle.seek(toOffset: size / 2)
      try handle.write(contentsOf: [byte ^ 0x40])
      try handle.close()
      let damaged = try await Curl.get(url)
      #expect(damaged.status == 500)
      #expect(damaged.headers["x-vault-error"]?.contains("damaged") == true)
      #expect(damaged.body.count < 1000)
      let intact = try await Curl.get(url, ["-r", "0-9999"])
      #expect(intact.status == 206 && intact.body == Array(source[0...9999]))
    }
  }

  /// `&id=` keys the resource by a content id: a second URL (another CDN host, another
  /// signature) with the same id is served from the vault without asking its origin.
  @Test func contentIDKeysAcrossURLs() async throws {
    try await withServer { f, _ in
      f.origin.serve("/a.mp3", bytes: source, contentType: "audio/mpeg")
      let first = try await Curl.get(
        f.server.url(forOrigin: f.origin.url("/a.mp3?sig=1"), contentID: "song 42"))
      #expect(first.status == 200 && first.body == source)
      f.origin.resetStatistics()
      let other = try #require(URL(string: "http://127.0.0.1:9/elsewhere/b.mp3?sig=2"))
      let second = try await Curl.get(
        f.server.url(forOrigin: other, contentID: "song 42"), ["-r", "1000-1999"])
      #expect(second.status == 206 && second.body == Array(source[1000...1999]))
      #expect(f.origin.requests.isEmpty)
      let base = f.server.baseURL.absoluteString
      #expect(
        f.server.url(forOrigin: other, contentID: "song 42").absoluteString
          == base
          + "stream?url=http%3A%2F%2F127.0.0.1%3A9%2Felsewhere%2Fb.mp3%3Fsig%3D2&id=song%2042")
      #expect(f.server.url(forAsset: "my song.mp3").absoluteString == base + "assets/my%20song.mp3")
    }
  }

  @Test func offlineMissingIs504() async throws {
    let f = try await ServerFixture.start(offline: true)
    f.origin.serve("/a.mp4", bytes: source)
    let response = try await Curl.get(f.server.url(forOrigin: f.origin.url("/a.mp4")))
    #expect(response.status == 504)
    #expect(response.headers["x-vault-error"]?.contains("offline") == true)
    #expect(f.origin.requests.isEmpty)
    await f.stop()
  }
}
