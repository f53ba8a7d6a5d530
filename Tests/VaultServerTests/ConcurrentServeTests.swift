import Foundation
import LoopbackOrigin
import Testing

/// `vault serve` and other `vault` commands on one vault at once (issue: concurrent use).
@Suite(
  "vault serve alongside other vault commands", .enabled(if: ProcessRunner.which("curl") != nil))
struct ConcurrentServeTests {
  let key = ServerFixture.repositoryRoot + "/Keys/demo.key"

  @Test("while serve streams: import, prune, fetch of the same URL and verify work or wait")
  func commandsWhileServing() async throws {
    let dir = FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-serve-concurrent-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let vaultArgs = ["--vault", dir + "/vault", "--key-file", key]
    let initResult = try await ProcessRunner.run(
      ServeProcess.binary, ["init"] + vaultArgs + ["--chunk-size", "16KiB"])
    #expect(initResult.status == 0, "\(initResult.stderr)")

    let size = 4 << 20
    let source = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    origin.serve("/show.mp4", bytes: source, contentType: "video/mp4", etag: "\"show-1\"")
    origin.setBehaviors([.trickle(bytesPerSecond: 4 << 20)], for: "/show.mp4")
    let originURL = origin.url("/show.mp4")
    let extra = dir + "/extra.bin"
    try Data(repeating: 0x42, count: 1 << 20).write(to: URL(fileURLWithPath: extra))

    let server = try await withCheckedThrowingContinuation { continuation in
      Thread { continuation.resume(with: Result { try ServeProcess(vaultArgs + ["--quiet"]) }) }
        .start()
    }
    let base = try #require(server.baseURL)
    let encoded =
      originURL.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    let stream = try #require(URL(string: base.absoluteString + "stream?url=" + encoded))

    // The player streams through serve while other commands run on the same vault.
    async let played = Curl.get(stream)
    async let fetched = ProcessRunner.run(
      ServeProcess.binary,
      ["fetch", originURL.absoluteString, "--range", "1000000-", "-o", dir + "/fetched"]
        + vaultArgs)
    async let imported = ProcessRunner.run(
      ServeProcess.binary, ["import", extra, "--pin"] + vaultArgs)
    async let pruned = ProcessRunner.run(
      ServeProcess.binary, ["prune", "--max-bytes", "1GiB"] + vaultArgs)
    let (play, fetch, importRun, pruneRun) = try await (played, fetched, imported, pruned)
    #expect(play.status == 200)
    #expect(play.body == source, "the stream through serve returned wrong bytes")
    #expect(fetch.status == 0, "fetch: \(fetch.stderr)")
    #expect(importRun.status == 0, "import: \(importRun.stderr)")
    #expect(pruneRun.status == 0, "prune: \(pruneRun.stderr)")
    let fetchedBytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/fetched"))
    #expect(fetchedBytes == Data(source[1_000_000...]))

    // A verify while serve still runs, then after it stopped: every stored chunk opens,
    // and the whole resource is there (fetched once between the two writers).
    let during = try await ProcessRunner.run(ServeProcess.binary, ["verify"] + vaultArgs)
    #expect(during.status == 0, "verify while serving: \(during.text) \(during.stderr)")
    // A second play comes from the vault; serve counts it for `vault stats`.
    let again = try await Curl.get(stream)
    #expect(again.body == source)
    let stop = server.terminate()
    #expect(stop.status == 0, "serve: \(stop.stderr)")
    let stats = try await ProcessRunner.run(ServeProcess.binary, ["stats", "--json"] + vaultArgs)
    let figures = try #require(
      try JSONSerialization.jsonObject(with: stats.stdout) as? [String: Any])
    #expect((figures["bytesFromCache"] as? Int ?? 0) >= size, "\(figures)")
    #expect((figures["bytesFromOrigin"] as? Int ?? 0) >= size / 2, "\(figures)")
    let offline = try await ProcessRunner.run(
      ServeProcess.binary,
      ["fetch", originURL.absoluteString, "--offline", "-o", dir + "/all"] + vaultArgs)
    #expect(offline.status == 0, "\(offline.stderr)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/all")) == Data(source))
  }
}
