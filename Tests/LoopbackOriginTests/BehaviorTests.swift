import Foundation
import LoopbackOrigin
import Testing

/// Every ``Behavior`` does what its documentation says, observed through curl.
@Suite("Behaviours")
struct BehaviorTests {
  let body = pattern(1000)

  func origin(_ behaviors: [Behavior], etag: String? = "\"v1\"") throws -> LoopbackOrigin {
    let origin = try LoopbackOrigin()
    origin.serve("/m", bytes: body, contentType: "video/mp4", etag: etag)
    origin.setBehaviors(behaviors, for: "/m")
    return origin
  }

  @Test("ignoreRange answers a range request with 200 and the whole body")
  func ignoreRange() throws {
    let origin = try origin([.ignoreRange])
    let response = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=10-19"])
    #expect(response.status == 200)
    #expect(summary(response.body) == summary(body))
    #expect(response.headers["content-length"] == "1000")
    #expect(response.headers["content-range"] == nil)
  }

  @Test("wrongContentRange sends 206 whose Content-Range is not the requested range")
  func wrongContentRange() throws {
    let origin = try origin([.wrongContentRange])
    let response = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=10-19"])
    #expect(response.status == 206)
    #expect(response.headers["content-range"] == "bytes 11-20/1000")
    #expect(summary(response.body) == summary(Array(body[10...19])))
  }

  @Test("missingContentRange sends 206 without Content-Range")
  func missingContentRange() throws {
    let origin = try origin([.missingContentRange])
    let response = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=10-19"])
    #expect(response.status == 206)
    #expect(response.headers["content-range"] == nil)
    #expect(summary(response.body) == summary(Array(body[10...19])))
  }

  @Test("dropAfter promises the full length, sends N bytes and closes: curl error 18")
  func dropAfter() throws {
    let origin = try origin([.dropAfter(bytes: 300)])
    let response = try Curl.fetch(origin.url("/m"))
    #expect(response.exitCode == 18)
    #expect(response.headers["content-length"] == "1000")
    #expect(summary(response.body) == summary(Array(body[0..<300])))
    #expect(origin.bodyBytesSent == 300)
    #expect(origin.requests.first?.bodyBytesSent == 300)
  }

  @Test("dropAfter applies to ranges too")
  func dropAfterRange() throws {
    let origin = try origin([.dropAfter(bytes: 5)])
    let response = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=100-199"])
    #expect(response.exitCode == 18)
    #expect(response.status == 206)
    #expect(summary(response.body) == summary(Array(body[100..<105])))
  }

  @Test("changeETagEachRequest gives every response a new ETag; If-Range never matches")
  func changeETag() throws {
    let origin = try origin([.changeETagEachRequest])
    let first = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=0-9"])
    let tag = try #require(first.headers["etag"])
    #expect(first.status == 206)
    let second = try Curl.fetch(
      origin.url("/m"), ["-H", "Range: bytes=10-19", "-H", "If-Range: \(tag)"])
    #expect(second.status == 200)
    #expect(summary(second.body) == summary(body))
    #expect(second.headers["etag"] != tag)
    #expect(second.headers["etag"] != "\"v1\"")
  }

  @Test("failFirst answers the first N requests with the status, then serves normally")
  func failFirst() throws {
    let origin = try origin([.failFirst(count: 2, status: 503)])
    let statuses = try (0..<3).map { _ in try Curl.fetch(origin.url("/m")).status }
    #expect(statuses == [503, 503, 200])
    origin.setBehaviors([.failFirst(count: 1, status: 500)], for: "/m")
    let again = try (0..<2).map { _ in try Curl.fetch(origin.url("/m")) }
    #expect(again.map(\.status) == [500, 200])
    #expect(summary(again[0].body) != summary(body))
    #expect(summary(again[1].body) == summary(body))
  }

  @Test("always answers every request with the status", arguments: [404, 416, 500])
  func always(status: Int) throws {
    let origin = try origin([.always(status: status)])
    for _ in 0..<2 {
      let response = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=0-9"])
      #expect(response.status == status)
      #expect(summary(response.body) != summary(Array(body[0...9])))
      #expect((response.headers["content-range"] == "bytes */1000") == (status == 416))
    }
  }

  @Test(
    "redirect sends Location exactly as given, absolute or relative",
    arguments: [301, 302, 307])
  func redirect(status: Int) throws {
    let origin = try LoopbackOrigin()
    origin.serve("/target", bytes: body)
    origin.setBehaviors([.redirect(to: "/target", status: status)], for: "/old")
    let raw = try Curl.fetch(origin.url("/old"))
    #expect(raw.status == status)
    #expect(raw.headers["location"] == "/target")
    let followed = try Curl.fetch(origin.url("/old"), ["-L", "-H", "Range: bytes=0-9"])
    #expect(followed.status == 206)
    #expect(summary(followed.body) == summary(Array(body[0...9])))
    let absolute = origin.url("/target").absoluteString
    origin.setBehaviors([.redirect(to: absolute, status: status)], for: "/old")
    let second = try Curl.fetch(origin.url("/old"), ["-L"])
    #expect(summary(second.body) == summary(body))
    #expect(origin.requests.map(\.path) == ["/old", "/old", "/target", "/old", "/target"])
  }

  @Test("redirectLoop redirects to itself until curl gives up (error 47)")
  func redirectLoop() throws {
    let origin = try origin([.redirectLoop])
    let response = try Curl.fetch(origin.url("/m?token=1"), ["-L", "--max-redirs", "5"])
    #expect(response.exitCode == 47)
    #expect(response.headers["location"] == "/m?token=1")
    #expect(origin.requests.count == 6)
  }

  @Test("trickle paces the body: 400 bytes at 1000 B/s take about 0.4 s")
  func trickle() throws {
    let origin = try LoopbackOrigin()
    origin.serve("/slow", bytes: pattern(400))
    origin.setBehaviors([.trickle(bytesPerSecond: 1000)], for: "/slow")
    let response = try Curl.fetch(origin.url("/slow"))
    #expect(response.exitCode == 0)
    #expect(summary(response.body) == summary(pattern(400)))
    #expect(response.elapsed >= 0.35)
    #expect(response.elapsed < 2.5)
  }

  @Test("stallAfterHeaders sends headers then nothing: curl --max-time 1 fails with 28")
  func stall() throws {
    let lines = LogLines()
    let origin = try LoopbackOrigin(log: lines.append)
    origin.serve("/m", bytes: body)
    origin.setBehaviors([.stallAfterHeaders(seconds: 5)], for: "/m")
    let response = try Curl.fetch(origin.url("/m"), ["--max-time", "1"])
    #expect(response.exitCode == 28)
    #expect(response.status == 200)
    #expect(response.body.isEmpty)
    #expect(response.elapsed < 3)
    // The origin notices the client left instead of sitting out the 5 s stall.
    #expect(lines.wait(for: "GET /m -> 200, connection dropped", timeout: 2))
  }

  @Test("a short stall delays the body, which then arrives whole")
  func shortStall() throws {
    let origin = try origin([.stallAfterHeaders(seconds: 0.3)])
    let response = try Curl.fetch(origin.url("/m"))
    #expect(response.exitCode == 0)
    #expect(summary(response.body) == summary(body))
    #expect(response.elapsed >= 0.25)
  }

  @Test("lowercaseHeaderNames sends every header name in lowercase")
  func lowercase() throws {
    let origin = try origin([.lowercaseHeaderNames])
    let response = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=0-9"])
    #expect(response.status == 206)
    #expect(response.headerLines.contains("content-range: bytes 0-9/1000"))
    #expect(response.headerLines.contains("content-length: 10"))
    #expect(response.headerLines.allSatisfy { $0 == $0.lowercased() || $0.hasPrefix("date:") })
    #expect(summary(response.body) == summary(Array(body[0...9])))
    let plain = try LoopbackOrigin()
    let normal = try Curl.fetch(plain.url("/m"))
    #expect(normal.headerLines.contains { $0.hasPrefix("Content-Length:") })
  }

  @Test("noContentType sends no Content-Type")
  func noContentType() throws {
    let origin = try origin([.noContentType])
    let response = try Curl.fetch(origin.url("/m"))
    #expect(response.status == 200)
    #expect(response.headers["content-type"] == nil)
    #expect(summary(response.body) == summary(body))
  }

  @Test("noContentLength delimits the body by closing the connection")
  func noContentLength() throws {
    let origin = try origin([.noContentLength])
    let response = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=0-99"])
    #expect(response.exitCode == 0)
    #expect(response.status == 206)
    #expect(response.headers["content-length"] == nil)
    #expect(response.headers["connection"] == "close")
    #expect(summary(response.body) == summary(Array(body[0...99])))
  }

  @Test("noETag sends no ETag, so an entity-tag If-Range never matches")
  func noETag() throws {
    let origin = try origin([.noETag])
    let response = try Curl.fetch(
      origin.url("/m"), ["-H", "Range: bytes=0-9", "-H", "If-Range: \"v1\""])
    #expect(response.headers["etag"] == nil)
    #expect(response.status == 200)
  }

  @Test("setBehaviors([]) makes the path well-behaved again")
  func reset() throws {
    let origin = try origin([.ignoreRange, .noContentType])
    origin.setBehaviors([], for: "/m")
    let response = try Curl.fetch(origin.url("/m"), ["-H", "Range: bytes=0-9"])
    #expect(response.status == 206)
    #expect(response.headers["content-type"] == "video/mp4")
  }

  @Test("behaviours are per path")
  func perPath() throws {
    let origin = try origin([.always(status: 500)])
    origin.serve("/other", bytes: body)
    #expect(try Curl.fetch(origin.url("/m")).status == 500)
    #expect(try Curl.fetch(origin.url("/other")).status == 200)
  }
}
