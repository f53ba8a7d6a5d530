import Foundation
import Testing

@Suite("vault CLI: key-of and config", .serialized)
struct KeyOfCLITests {
  func initialised() throws -> CLI { try CLI.initialised() }

  func keyOf(_ cli: CLI, _ args: [String]) throws -> [String: Any] {
    let result = try cli.run(["key-of"] + args + ["--json"])
    #expect(result.status == 0, "\(result.stderr)")
    return try #require(try JSONSerialization.jsonObject(with: result.stdoutData) as? [String: Any])
  }

  @Test("key-of prints the canonical identity, the id and whether it is stored")
  func keyOf() throws {
    let cli = try initialised()
    defer { cli.cleanup() }
    let text = try cli.run(
      ["key-of", "HTTPS://Media.Example.com:443/a/../v.mp4?token=abc&q=1#frag"])
    #expect(text.status == 0, "\(text.stderr)")
    #expect(
      text.stdout.contains("identity  url:https://media.example.com/v.mp4?q=1"), "\(text.stdout)")
    #expect(text.stdout.contains("stored    no"))
    let json = try keyOf(cli, ["https://media.example.com/v.mp4?q=1&X-Amz-Signature=1"])
    #expect(json["identity"] as? String == "url:https://media.example.com/v.mp4?q=1")
    let id = try #require(json["id"] as? String)
    #expect(id.count == 64 && id.allSatisfy(\.isHexDigit))
    #expect(text.stdout.contains(id))
    #expect(json["stored"] as? Bool == false)
    // --id overrides the URL and matches an import under that name.
    try Data("hello".utf8).write(to: URL(fileURLWithPath: cli.path("ep1.bin")))
    #expect(try cli.run(["import", "ep1.bin", "--id", "episode-1"]).status == 0)
    let byID = try keyOf(cli, ["https://media.example.com/v.mp4", "--id", "episode-1"])
    #expect(byID["identity"] as? String == "id:episode-1")
    #expect(byID["stored"] as? Bool == true)
    let listed = try cli.run(["info", "episode-1", "--json"])
    let info = try #require(
      try JSONSerialization.jsonObject(with: listed.stdoutData) as? [String: Any])
    #expect(info["id"] as? String == byID["id"] as? String)
    // Refusals are one line.
    expectOneLineError(try cli.run(["key-of", "ftp://example.com/v.mp4"]), containing: "http")
    expectOneLineError(try cli.run(["key-of", "https:///v.mp4"]), containing: "no host")
    expectOneLineError(try cli.run(["key-of", "x", "--id", ""]), containing: "content id")
  }

  @Test("config round trip: alias and volatile edits change key-of, and are sealed")
  func configRoundTrip() throws {
    let cli = try initialised()
    defer { cli.cleanup() }
    let shown = try cli.run(["config", "show", "--json"])
    #expect(shown.status == 0, "\(shown.stderr)")
    let defaults = try #require(
      try JSONSerialization.jsonObject(with: shown.stdoutData) as? [String: Any])
    let volatile = try #require(defaults["volatileParameters"] as? [String])
    #expect(volatile.contains("X-Amz-*") && volatile.contains("token"))
    #expect((defaults["aliasGroups"] as? [Any])?.isEmpty == true)
    #expect(try cli.run(["config"]).stdout.contains("host alias groups"))

    let a = "https://cdn-a.example.com/show/ep1.mp4?session=1"
    let b = "https://cdn-b.example.com/show/ep1.mp4?session=2"
    let idA = try keyOf(cli, [a])["id"] as? String
    let idB = try keyOf(cli, [b])["id"] as? String
    #expect(idA != nil && idA != idB)

    let added = try cli.run(["config", "alias", "add", "cdn-a.example.com", "CDN-B.example.com"])
    #expect(added.status == 0, "\(added.stderr)")
    #expect(added.stdout.contains("cdn-a.example.com <- cdn-b.example.com"))
    #expect(try cli.run(["config", "volatile", "add", "session"]).status == 0)
    let merged = try keyOf(cli, [b])
    #expect(merged["identity"] as? String == "url:https://cdn-a.example.com/show/ep1.mp4")
    let mergedA = try keyOf(cli, [a])
    #expect(merged["id"] as? String == mergedA["id"] as? String)
    #expect(merged["id"] as? String != idA)  // the session parameter no longer counts

    let show = try cli.run(["config", "show"])
    #expect(show.stdout.contains("cdn-a.example.com <- cdn-b.example.com"), "\(show.stdout)")
    #expect(show.stdout.contains("session"))

    // The host names are nowhere in the vault's files.
    var all = Data()
    for name in try FileManager.default.subpathsOfDirectory(atPath: cli.path("v")) {
      var isDirectory: ObjCBool = false
      let path = cli.path("v/" + name)
      if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
        !isDirectory.boolValue
      {
        all += try Data(contentsOf: URL(fileURLWithPath: path))
      }
    }
    #expect(all.range(of: Data("cdn-b.example".utf8)) == nil)
    #expect(all.range(of: Data("session".utf8)) == nil)

    // Removing undoes; reset restores the default list.
    #expect(try cli.run(["config", "alias", "remove", "cdn-b.example.com"]).status == 0)
    #expect(try cli.run(["config", "volatile", "remove", "session", "token"]).status == 0)
    let after = try keyOf(cli, [b + "&token=t"])
    #expect(after["identity"] as? String == "url:" + b + "&token=t")
    #expect(try cli.run(["config", "volatile", "reset"]).status == 0)
    let reset = try cli.run(["config", "show", "--json"])
    let resetRules = try #require(
      try JSONSerialization.jsonObject(with: reset.stdoutData) as? [String: Any])
    #expect(resetRules["volatileParameters"] as? [String] == volatile)

    // Errors are one line.
    expectOneLineError(
      try cli.run(["config", "alias", "add", "only-one.example.com"]), containing: "two hosts")
    expectOneLineError(
      try cli.run(["config", "alias", "remove", "nowhere.example.com"]),
      containing: "no alias group")
    expectOneLineError(try cli.run(["config", "volatile", "add", "*"]), containing: "`*`")
    expectOneLineError(
      try cli.run(["config", "volatile", "remove", "not-there"]), containing: "not a volatile")
    #expect(try cli.run(["config", "alias", "add", "x.example", "y.example"]).status == 0)
    #expect(try cli.run(["config", "alias", "add", "p.example", "q.example"]).status == 0)
    expectOneLineError(
      try cli.run(["config", "alias", "add", "x.example", "q.example"]), containing: "different")
  }
}
