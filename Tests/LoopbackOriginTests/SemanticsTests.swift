import Foundation
import LoopbackOrigin
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// RFC 9110 behaviour of a well-behaved origin, seen through curl.
@Suite("HTTP semantics")
struct SemanticsTests {
  let body = pattern(1000)
  let modified = Date(timeIntervalSince1970: 1_700_000_000)

  func origin() throws -> LoopbackOrigin {
    let origin = try LoopbackOrigin()
    origin.serve(
      "/media.bin", bytes: body, contentType: "video/mp4", etag: "\"v1\"", lastModified: modified)
    return origin
  }

  @Test("a full GET is 200 with the body and every validator header")
  func fullGet() throws {
    let origin = try origin()
    let response = try Curl.fetch(origin.url("/media.bin"))
    #expect(response.exitCode == 0)
    #expect(response.status == 200)
    #expect(summary(response.body) == summary(body))
    #expect(response.headers["content-length"] == "1000")
    #expect(response.headers["content-type"] == "video/mp4")
    #expect(response.headers["accept-ranges"] == "bytes")
    #expect(response.headers["etag"] == "\"v1\"")
    #expect(response.headers["last-modified"] == "Tue, 14 Nov 2023 22:13:20 GMT")
    #expect(response.headers["content-range"] == nil)
    #expect(response.headers["date"] != nil)
  }

  @Test(
    "each Range form gives 206 with the right bytes and Content-Range",
    arguments: [
      ("bytes=100-199", 100...199),
      ("bytes=990-", 990...999),
      ("bytes=-10", 990...999),
      ("bytes=-5000", 0...999),
      ("bytes=500-99999", 500...999),
      ("bytes=0-0", 0...0),
      ("BYTES=7-8", 7...8),
      ("bytes=2000-3000, 5-9", 5...9),
    ])
  func ranges(header: String, expected: ClosedRange<Int>) throws {
    let origin = try origin()
    let response = try Curl.fetch(origin.url("/media.bin"), ["-H", "Range: \(header)"])
    #expect(response.status == 206)
    #expect(summary(response.body) == summary(Array(body[expected])))
    #expect(
      response.headers["content-range"]
        == "bytes \(expected.lowerBound)-\(expected.upperBound)/1000")
    #expect(response.headers["content-length"] == "\(expected.count)")
    #expect(origin.requests.first?.range == header)
  }

  @Test(
    "an unsatisfiable range is 416 with Content-Range bytes */length",
    arguments: ["bytes=1000-", "bytes=5000-6000", "bytes=-0", "bytes=1000-1001, 2000-"])
  func unsatisfiable(header: String) throws {
    let origin = try origin()
    let response = try Curl.fetch(origin.url("/media.bin"), ["-H", "Range: \(header)"])
    #expect(response.status == 416)
    #expect(response.headers["content-range"] == "bytes */1000")
    #expect(summary(response.body) != summary(body))
  }

  @Test("any range of an empty body is 416")
  func emptyBody() throws {
    let origin = try LoopbackOrigin()
    origin.serve("/empty", bytes: [])
    let whole = try Curl.fetch(origin.url("/empty"))
    #expect(whole.status == 200)
    #expect(whole.headers["content-length"] == "0")
    let ranged = try Curl.fetch(origin.url("/empty"), ["-H", "Range: bytes=0-"])
    #expect(ranged.status == 416)
    #expect(ranged.headers["content-range"] == "bytes */0")
  }

  @Test(
    "a malformed or foreign Range is ignored: 200 with the full body",
    arguments: [
      "bytes=5-2", "bytes=abc", "items=0-1", "bytes=--1", "bytes=", "bytes 0-1", "bytes=1-2-3",
      "bytes=0-1,2-3",
    ])
  func malformedRange(header: String) throws {
    let origin = try origin()
    let response = try Curl.fetch(origin.url("/media.bin"), ["-H", "Range: \(header)"])
    #expect(response.status == 200)
    #expect(summary(response.body) == summary(body))
    #expect(response.headers["content-range"] == nil)
  }

  @Test("HEAD sends the GET headers and no body, and ignores Range")
  func head() throws {
    let origin = try origin()
    let response = try Curl.fetch(origin.url("/media.bin"), ["-I", "-H", "Range: bytes=0-9"])
    #expect(response.exitCode == 0)
    #expect(response.status == 200)
    #expect(response.headers["content-length"] == "1000")
    #expect(response.headers["etag"] == "\"v1\"")
    // curl -I writes the head to the output file; nothing may follow it.
    #expect(
      String(decoding: response.body, as: UTF8.self).hasSuffix(
        "ETag: \"v1\"\r\nAccept-Ranges: bytes\r\n\r\n"))
    #expect(origin.requests.map(\.method) == ["HEAD"])
    #expect(origin.bodyBytesSent == 0)
  }

  @Test(
    "If-Range applies the range only when the validator matches strongly",
    arguments: [
      ("\"v1\"", 206),
      ("\"v0\"", 200),
      ("W/\"v1\"", 200),
      ("Tue, 14 Nov 2023 22:13:20 GMT", 206),
      ("Tuesday, 14-Nov-23 22:13:20 GMT", 206),
      ("Tue Nov 14 22:13:20 2023", 206),
      ("Tue, 14 Nov 2023 22:13:21 GMT", 200),
      ("not a date", 200),
    ])
  func ifRange(validator: String, expectedStatus: Int) throws {
    let origin = try origin()
    let response = try Curl.fetch(
      origin.url("/media.bin"), ["-H", "Range: bytes=10-19", "-H", "If-Range: \(validator)"])
    #expect(response.status == expectedStatus)
    #expect(
      summary(response.body) == summary((expectedStatus == 206 ? Array(body[10...19]) : body)))
    #expect(origin.requests.first?.ifRange == validator)
  }

  @Test("an unknown path is 404; the query string never affects routing but is recorded")
  func routing() throws {
    let origin = try origin()
    let missing = try Curl.fetch(origin.url("/nothing-here"))
    #expect(missing.status == 404)
    let signed = try Curl.fetch(
      origin.url("/media.bin?X-Amz-Signature=abc123&X-Amz-Expires=60"),
      ["-H", "Range: bytes=0-3"])
    #expect(signed.status == 206)
    #expect(summary(signed.body) == summary(Array(body[0...3])))
    let records = origin.requests
    #expect(records.map(\.status) == [404, 206])
    #expect(records.last?.path == "/media.bin")
    #expect(records.last?.query == "X-Amz-Signature=abc123&X-Amz-Expires=60")
    #expect(records.first?.query == nil)
  }

  @Test("percent-encoded paths route to the decoded name")
  func percentEncoding() throws {
    let origin = try LoopbackOrigin()
    origin.serve("/a song.mp3", bytes: [1, 2, 3], contentType: "audio/mpeg")
    #expect(origin.url("/a song.mp3").absoluteString.hasSuffix("/a%20song.mp3"))
    let response = try Curl.fetch(origin.url("/a song.mp3"))
    #expect(response.status == 200)
    #expect(summary(response.body) == summary([1, 2, 3]))
    #expect(origin.requests.first?.path == "/a song.mp3")
  }

  @Test("the request log records headers, statuses and exact body bytes")
  func requestLog() throws {
    let origin = try origin()
    _ = try Curl.fetch(
      origin.url("/media.bin"), ["-H", "Range: bytes=0-99", "-H", "X-Test: one"])
    _ = try Curl.fetch(origin.url("/media.bin"))
    let records = origin.requests
    #expect(records.count == 2)
    #expect(records.first?.headers["x-test"] == "one")
    #expect(records.first?.headers["host"] == "127.0.0.1:\(origin.port)")
    #expect(records.map(\.bodyBytesSent) == [100, 1000])
    #expect(origin.bodyBytesSent == 1100)
    origin.resetStatistics()
    #expect(origin.requests.isEmpty)
    #expect(origin.bodyBytesSent == 0)
    #expect(origin.connectionsAccepted == 0)
  }

  @Test("replacing the body changes the ETag, so the old If-Range gets the new body whole")
  func replaceBody() throws {
    let origin = try LoopbackOrigin()
    origin.serve("/a", bytes: pattern(100), lastModified: modified)
    let first = try Curl.fetch(origin.url("/a"), ["-H", "Range: bytes=0-9"])
    let oldTag = try #require(first.headers["etag"])
    let newBody = pattern(120, seed: 7)
    origin.replaceBody("/a", bytes: newBody)
    let second = try Curl.fetch(
      origin.url("/a"), ["-H", "Range: bytes=10-19", "-H", "If-Range: \(oldTag)"])
    #expect(second.status == 200)
    #expect(summary(second.body) == summary(newBody))
    #expect(second.headers["etag"] != oldTag)
    #expect(second.headers["last-modified"] != first.headers["last-modified"])
    let dated = try Curl.fetch(
      origin.url("/a"),
      ["-H", "Range: bytes=10-19", "-H", "If-Range: \(first.headers["last-modified"] ?? "")"])
    #expect(dated.status == 200)
  }

  @Test("the same bytes get the same derived ETag; different bytes a different one")
  func derivedETag() throws {
    let origin = try LoopbackOrigin()
    origin.serve("/a", bytes: pattern(64))
    origin.serve("/b", bytes: pattern(64))
    origin.serve("/c", bytes: pattern(64, seed: 1))
    let tags = try ["/a", "/b", "/c"].map { try Curl.fetch(origin.url($0)).headers["etag"] }
    #expect(tags[0] != nil)
    #expect(tags[0] == tags[1])
    #expect(tags[0] != tags[2])
  }

  @Test("URLSession gets a range (Foundation's own client)")
  func urlSession() async throws {
    let origin = try origin()
    var request = URLRequest(url: origin.url("/media.bin"), timeoutInterval: 5)
    request.setValue("bytes=20-29", forHTTPHeaderField: "Range")
    let session = URLSession(configuration: .ephemeral)
    defer { session.finishTasksAndInvalidate() }
    let (data, response) = try await session.data(for: request)
    let http = try #require(response as? HTTPURLResponse)
    #expect(http.statusCode == 206)
    #expect([UInt8](data) == Array(body[20...29]))
    #expect(http.value(forHTTPHeaderField: "Content-Range") == "bytes 20-29/1000")
  }
}
