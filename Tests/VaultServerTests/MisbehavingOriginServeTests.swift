import Foundation
import LoopbackOrigin
import Testing
import VaultCore
import VaultLoader
import VaultServer

/// curl through `stream?url=` while the origin misbehaves: every answer is the source's
/// bytes (or a clean error status), and what the vault keeps verifies.
@Suite("Misbehaving origins through the proxy (curl)")
struct MisbehavingOriginServeTests {
  static let cases: [(String, [Behavior])] = [
    ("ignores Range", [.ignoreRange]),
    ("drops the connection after 50,000 bytes", [.dropAfter(bytes: 50_000)]),
    ("no Content-Length", [.noContentLength]),
    ("lower-case header names, no Content-Type", [.lowercaseHeaderNames, .noContentType]),
    ("500 twice, then fine", [.failFirst(count: 2, status: 500)]),
    ("no ETag", [.noETag]),
  ]

  /// The range each test asks for besides the whole body: inside, across chunk borders.
  static let range = (7 * ServerFixture.chunk + 5, 12 * ServerFixture.chunk + 17)

  /// A server whose origin serves 20 chunks and a bit at `/m.mp4` with `behaviors`, and
  /// the proxy URL of that resource.
  func start(_ behaviors: [Behavior], seed: UInt64) async throws
    -> (ServerFixture, [UInt8], URL)
  {
    let f = try await ServerFixture.start()
    let source = media(20 * ServerFixture.chunk + 123, seed: seed)
    f.origin.serve("/m.mp4", bytes: source, contentType: "video/mp4")
    f.origin.setBehaviors(behaviors, for: "/m.mp4")
    return (f, source, f.server.url(forOrigin: f.origin.url("/m.mp4")))
  }

  @Test(arguments: 0..<cases.count)
  func bytesStayRight(_ index: Int) async throws {
    let (name, behaviors) = Self.cases[index]
    let (f, source, url) = try await start(behaviors, seed: UInt64(60 + index))
    let (start, end) = Self.range
    let part = try await Curl.get(url, ["-r", "\(start)-\(end)"])
    #expect(part.status == 206, "\(name)")
    #expect(part.body.elementsEqual(source[start...end]), "\(name): the range")
    let full = try await Curl.get(url)
    #expect(full.status == 200, "\(name)")
    #expect(full.body.elementsEqual(source), "\(name): the whole body")
    try await f.server.loader.flush()
    let id = try f.server.loader.assetID(for: f.origin.url("/m.mp4"))
    #expect(try f.vault.verify(id).allSatisfy(\.ok), "\(name): what the vault kept verifies")
    await f.stop()
  }

  static let refusals: [(String, [Behavior])] = [
    ("a new ETag on every request", [.changeETagEachRequest]),
    ("a wrong Content-Range", [.wrongContentRange]),
    ("206 without Content-Range", [.missingContentRange]),
    ("a redirect loop", [.redirectLoop]),
  ]

  /// Origins the vault cannot trust: each answer is either the right bytes or an error
  /// status with a reason (never a 2xx with wrong bytes), and nothing wrong is kept.
  @Test(arguments: 0..<refusals.count)
  func rightBytesOrCleanError(_ index: Int) async throws {
    let (name, behaviors) = Self.refusals[index]
    let (f, source, url) = try await start(behaviors, seed: UInt64(70 + index))
    let (start, end) = Self.range
    for (arguments, expected) in [
      (["-r", "\(start)-\(end)"], source[start...end]), ([], source[...]),
    ] {
      let response = try await Curl.get(url, arguments)
      if (200..<300).contains(response.status) {
        #expect(response.body.elementsEqual(expected), "\(name): a 2xx with wrong bytes")
      } else {
        #expect(response.status >= 500, "\(name): status \(response.status)")
        #expect(response.headers["x-vault-error"] != nil, "\(name): no reason given")
      }
    }
    try await f.server.loader.flush()
    let id = try f.server.loader.assetID(for: f.origin.url("/m.mp4"))
    if let results = try? f.vault.verify(id) {
      let allOK = results.allSatisfy(\.ok)
      #expect(allOK, "\(name): what the vault kept verifies")
    }
    await f.stop()
  }
}
