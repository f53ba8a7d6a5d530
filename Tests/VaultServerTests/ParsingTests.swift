import Foundation
import Testing

@testable import VaultServer

/// Range, Host and route parsing, without a socket.
@Suite("Parsing")
struct ParsingTests {
  @Test func rangeHeaders() {
    let n: UInt64 = 1000
    let cases: [(String?, ByteRangeRequest)] = [
      (nil, .full), ("bytes=0-99", .partial(start: 0, end: 99)),
      ("bytes=990-", .partial(start: 990, end: 999)), ("bytes=-10", .partial(start: 990, end: 999)),
      ("bytes=-5000", .partial(start: 0, end: 999)), ("BYTES = 5-5", .partial(start: 5, end: 5)),
      ("bytes=0-99999999999999999999999", .partial(start: 0, end: 999)),
      ("bytes=2000-3000, 10-20", .partial(start: 10, end: 20)),
      ("bytes=, 1-2,", .partial(start: 1, end: 2)),
      ("bytes=1000-", .unsatisfiable), ("bytes=-0", .unsatisfiable),
      ("bytes=5-4", .full), ("bytes=x-1", .full), ("pages=1-2", .full), ("bytes=1-2-3", .full),
      ("bytes=", .full), ("bytes 1-2", .full), ("bytes=+1-2", .full),
    ]
    for (header, expected) in cases {
      #expect(ByteRangeRequest(header: header, length: n) == expected, "\(header ?? "nil")")
    }
    #expect(ByteRangeRequest(header: "bytes=0-", length: 0) == .unsatisfiable)
    #expect(ByteRangeRequest(header: "bytes=-1", length: 0) == .unsatisfiable)
  }

  @Test func hostHeaders() {
    let check = HostCheck(boundHost: nil)
    for good in [
      "localhost", "LOCALHOST:8080", "127.0.0.1", "127.0.0.1:1", "127.255.0.9:65535",
      "[::1]", "[::1]:80", "a.localhost:9",
    ] {
      #expect(check.allows(good), "\(good)")
    }
    for bad in [
      "", "evil.com", "127.0.0.1.evil.com", "127.0.0.256", "127.0.0", "10.0.0.1",
      "[::2]", "localhost:", "localhost:x", "[::1]x", "0.0.0.0", "127.0.0.1:80:80",
    ] {
      #expect(!check.allows(bad), "\(bad)")
    }
    #expect(HostCheck(boundHost: "192.168.1.5").allows("192.168.1.5:8000"))
  }

  @Test func routes() throws {
    #expect(Route.parse("/") == nil)
    #expect(Route.parse("//assets/a") == nil)
    let asset = try #require(Route.parse("/tok/assets/my%20song.mp3?x=1"))
    #expect(asset.token == "tok" && asset.route == .asset("my song.mp3"))
    #expect(Route.parse("/tok/assets/a/b")?.route == .notFound)
    #expect(Route.parse("/tok/")?.route == .notFound)
    #expect(Route.parse("/tok/assets/")?.route == .notFound)
    let stream = try #require(
      Route.parse("/tok/stream?url=https%3A%2F%2Fcdn.example.com%2Fa.mp4%3Fsig%3D1%26b%3D2&id=film")
    )
    #expect(
      stream.route
        == .stream(
          url: try #require(URL(string: "https://cdn.example.com/a.mp4?sig=1&b=2")),
          contentID: "film"))
    #expect(Route.parse("/tok/stream?url=ftp%3A%2F%2Fx%2Fa")?.route == .notFound)
    #expect(Route.parse("/tok/stream?id=1")?.route == .notFound)
  }

  @Test func tokens() throws {
    let token = try AccessToken.random()
    #expect(token.value.count == 43)
    #expect(AccessToken.isAcceptable(token.value))
    #expect(token.matches(Substring(token.value)))
    #expect(
      !token.matches(Substring(String(token.value.dropLast()) + "A")) || token.value.last == "A")
    #expect(!token.matches(""))
    #expect(!AccessToken.isAcceptable("short"))
    #expect(!AccessToken.isAcceptable("has/slash-and-more-characters"))
  }
}
