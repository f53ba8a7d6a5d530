import Foundation
import LoopbackOrigin
import Testing

@Suite("vault fetch / prefetch against a loopback origin", .serialized)
struct FetchCLITests {
  func setUp() throws -> (CLI, LoopbackOrigin, Data) {
    var cli = try CLI()
    cli.environment["VAULT_DIR"] = cli.path("v")
    cli.environment["VAULT_KEY_FILE"] = cli.path("v.key")
    #expect(try cli.run(["init", "--chunk-size", "16KiB"]).status == 0)
    let origin = try LoopbackOrigin()
    let data = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) })
    origin.serve("/clip.mp4", data: data, contentType: "video/mp4", etag: "\"c1\"")
    return (cli, origin, data)
  }

  @Test("fetch a range to a file, then again from the vault only")
  func fetchRange() throws {
    let (cli, origin, data) = try setUp()
    defer {
      origin.stop()
      cli.cleanup()
    }
    let url = origin.url("/clip.mp4").absoluteString
    let first = try cli.run(["fetch", url, "--range", "20000-99999", "-o", "part.bin"])
    #expect(first.status == 0, "\(first.stderr)")
    #expect(
      try Data(contentsOf: URL(fileURLWithPath: cli.path("part.bin"))) == data[20_000...99_999])
    let sent = origin.bodyBytesSent
    #expect(sent <= 2 + 6 * 16_384)
    let again = try cli.run(["fetch", url, "--range", "20000-99999"])
    #expect(again.stdoutData == data[20_000...99_999])
    #expect(origin.bodyBytesSent == sent, "the second fetch went to the origin")
    // Whole resource to stdout: only the missing chunks are fetched.
    let whole = try cli.run(["fetch", url])
    #expect(whole.stdoutData == data)
    #expect(origin.bodyBytesSent <= sent + data.count - 4 * 16_384)
    #expect(try cli.run(["verify"]).status == 0)
  }

  @Test("offline and origin errors: one line, non-zero exit, no output file")
  func errors() throws {
    let (cli, origin, _) = try setUp()
    defer {
      origin.stop()
      cli.cleanup()
    }
    let url = origin.url("/clip.mp4").absoluteString
    expectOneLineError(
      try cli.run(["fetch", url, "--offline", "-o", "x.bin"]), containing: "offline")
    #expect(!FileManager.default.fileExists(atPath: cli.path("x.bin")))
    expectOneLineError(
      try cli.run(["fetch", origin.url("/nope").absoluteString]), containing: "404")
    expectOneLineError(try cli.run(["fetch", "ftp://example.com/a"]), containing: "http")
    origin.setBehaviors([.wrongContentRange], for: "/clip.mp4")
    expectOneLineError(
      try cli.run(["fetch", url, "--range", "50000-60000"]), containing: "misbehaved")
  }

  @Test("prefetch --all --pin stores everything and pins it; offline fetch then works")
  func prefetchAll() throws {
    let (cli, origin, data) = try setUp()
    defer {
      origin.stop()
      cli.cleanup()
    }
    let url = origin.url("/clip.mp4").absoluteString
    let result = try cli.run(["prefetch", url, "--all", "--pin"])
    #expect(result.status == 0, "\(result.stderr)")
    let list = try cli.run(["list", "--json"])
    let assets = try #require(
      try JSONSerialization.jsonObject(with: list.stdoutData) as? [[String: Any]])
    #expect(assets.count == 1)
    #expect(assets.first?["pinned"] as? Bool == true)
    #expect(assets.first?["chunksStored"] as? Int == assets.first?["chunksTotal"] as? Int)
    #expect(assets.first?["contentType"] as? String == "video/mp4")
    origin.stop()
    let offline = try cli.run(["fetch", url, "--offline"])
    #expect(offline.status == 0, "\(offline.stderr)")
    #expect(offline.stdoutData == data)
    expectOneLineError(try cli.run(["prefetch", url]), containing: "--all")
  }
}
