import Foundation
import Testing

@testable import LoopbackOrigin

/// The header grammars, without sockets.
@Suite("Header parsing")
struct ParsingTests {
  @Test("Range resolution follows RFC 9110 14.1.2")
  func rangeResolution() {
    #expect(RangeHeader.resolve(nil, length: 10) == .full)
    #expect(RangeHeader.resolve("bytes=0-4", length: 10) == .partial(0...4))
    #expect(RangeHeader.resolve("bytes=8-", length: 10) == .partial(8...9))
    #expect(RangeHeader.resolve("bytes=-3", length: 10) == .partial(7...9))
    #expect(RangeHeader.resolve("bytes=-30", length: 10) == .partial(0...9))
    #expect(RangeHeader.resolve("bytes=10-", length: 10) == .unsatisfiable)
    #expect(RangeHeader.resolve("bytes=-0", length: 10) == .unsatisfiable)
    #expect(RangeHeader.resolve("bytes=0-", length: 0) == .unsatisfiable)
    #expect(RangeHeader.resolve("bytes=5-1", length: 10) == .full)
    #expect(RangeHeader.resolve("bytes=0-1,4-5", length: 10) == .full)
    #expect(RangeHeader.resolve("bytes=0-99999999999999999999999", length: 10) == .partial(0...9))
    #expect(RangeHeader.resolve("bytes=99999999999999999999999-", length: 10) == .unsatisfiable)
    #expect(RangeHeader.resolve("bytes=+1-2", length: 10) == .full)
  }

  @Test("HTTP dates round-trip and all three formats parse")
  func dates() throws {
    let date = Date(timeIntervalSince1970: 784_111_777)
    #expect(HTTPDate.format(date) == "Sun, 06 Nov 1994 08:49:37 GMT")
    #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == date)
    #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == date)
    #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == date)
    #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 PST") == nil)
    #expect(HTTPDate.parse("yesterday") == nil)
  }

  @Test("request heads parse; targets split into decoded path and raw query")
  func requestHeads() throws {
    let head = Array("GET http://h/a%20b?x=%20 HTTP/1.1\r\nHost: h\r\nA: 1\r\na: 2\r\n\r\n".utf8)
    let request = try HTTPRequestParser.parse(head[...])
    #expect(request.path == "/a b")
    #expect(request.query == "x=%20")
    #expect(request.header("a") == "1, 2")
    #expect(HTTPRequestParser.headEnd(in: head, from: 0) == head.count)
    #expect(HTTPRequestParser.headEnd(in: Array("GET / HTTP/1.0\n\nrest".utf8), from: 0) == 16)
    #expect(throws: HTTPRequestParser.Failure.self) {
      try HTTPRequestParser.parse(Array("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n".utf8)[...])
    }
  }
}
