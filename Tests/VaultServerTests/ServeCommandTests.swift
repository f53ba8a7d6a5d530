import Foundation
import LoopbackOrigin
import Testing
import VaultCore
import VaultLoader

/// The `vault serve` binary: its stdout contract, SIGTERM, and a restart mid-stream.
@Suite(
  "vault serve (binary)",
  .enabled(if: ProcessRunner.hasCurl, "curl is not installed (scripts/install-deps --test)"))
struct ServeCommandTests {
  let key = ServerFixture.repositoryRoot + "/Keys/demo.key"

  func makeVault() async throws -> String {
    let dir = FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-serve-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let result = try await ProcessRunner.run(
      ServeProcess.binary,
      ["init", "--vault", dir + "/vault", "--key-file", key, "--chunk-size", "16KiB"])
    #expect(result.status == 0, "\(result.stderr)")
    return dir
  }

  /// Starts `vault serve` on a thread of its own (it blocks until the line is printed).
  func serve(_ args: [String]) async throws -> ServeProcess {
    try await withCheckedThrowingContinuation { continuation in
      Thread { continuation.resume(with: Result { try ServeProcess(args) }) }.start()
    }
  }

  func stop(_ server: ServeProcess) async -> (status: Int32, extraStdout: String, stderr: String) {
    await withCheckedContinuation { continuation in
      Thread { continuation.resume(returning: server.terminate()) }.start()
    }
  }

  @Test func oneLineOnStdoutServesAndExitsZeroOnSIGTERM() async throws {
    let dir = try await makeVault()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let file = dir + "/a.bin"
    let bytes = media(100_000, seed: 3)
    try Data(bytes).write(to: URL(fileURLWithPath: file))
    let imported = try await ProcessRunner.run(
      ServeProcess.binary, ["import", file, "--vault", dir + "/vault", "--key-file", key])
    #expect(imported.status == 0)
    let server = try await serve(["--vault", dir + "/vault", "--key-file", key, "--port", "0"])
    let base = try #require(server.baseURL)
    #expect(base.absoluteString.hasPrefix("http://127.0.0.1:"))
    #expect(base.absoluteString.hasSuffix("/"))
    #expect(base.pathComponents.count == 2 && base.pathComponents[1].count >= 22)
    let response = try await Curl.get(base.appendingPathComponent("assets/a.bin"))
    #expect(response.status == 200 && response.body == bytes)
    let (status, extra, log) = await stop(server)
    #expect(status == 0, "stderr: \(log)")
    #expect(extra.isEmpty, "more than one line on stdout: \(extra)")
    #expect(log.contains("GET assets/a.bin 200"))
    #expect(!log.contains(base.pathComponents[1]), "the token must not be logged")
  }

  /// A client that stops reading must not make the server buffer the asset: the server's
  /// resident memory stays within a few blocks while a 64 MiB response waits.
  @Test func slowClientDoesNotMakeTheServerBuffer() async throws {
    let dir = try await makeVault()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let file = dir + "/big.bin"
    let pattern = media(1 << 20, seed: 5)
    try Data((0..<64).flatMap { _ in pattern }).write(to: URL(fileURLWithPath: file))
    let imported = try await ProcessRunner.run(
      ServeProcess.binary, ["import", file, "--vault", dir + "/vault", "--key-file", key])
    #expect(imported.status == 0)
    let server = try await serve(["--vault", dir + "/vault", "--key-file", key, "--quiet"])
    let base = try #require(server.baseURL)
    let pid = server.process.pid
    let before = residentBytes(pid)
    let client = try RawHTTPClient(port: base.port ?? 0)
    let got = try client.startGet(
      base.path + "/assets/big.bin", port: base.port ?? 0, readingAbout: 1 << 20)
    try await Task.sleep(for: .milliseconds(1500))
    let during = residentBytes(pid)
    #expect(got < 64 << 20)
    #expect(
      during - before < 32 << 20, "server grew by \(during - before) bytes for a stalled client")
    let (status, _, _) = await stop(server)
    #expect(status == 0)
  }

  func residentBytes(_ pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
  }

  @Test func badVaultIsOneLineError() async throws {
    let result = try await ProcessRunner.run(
      ServeProcess.binary, ["serve", "--vault", "/nonexistent/vault", "--key-file", key])
    #expect(result.status == 1)
    #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    #expect(result.stderr.hasPrefix("vault: error: "))
  }

  /// Stop the server mid-stream, start it again, play again: nothing that was stored is
  /// fetched again, every stored chunk opens.
  @Test func restartMidStreamRefetchesNothingStored() async throws {
    let dir = try await makeVault()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let chunk = 16_384
    let size = 192 * chunk  // 3 MiB
    let source = media(size, seed: 11)
    let origin = try LoopbackOrigin()
    defer { origin.stop() }
    origin.serve("/film.mp4", bytes: source, contentType: "video/mp4")
    origin.setBehaviors([.trickle(bytesPerSecond: 300_000)], for: "/film.mp4")
    let args = ["--vault", dir + "/vault", "--key-file", key, "--quiet"]
    let encoded =
      origin.url("/film.mp4").absoluteString.addingPercentEncoding(
        withAllowedCharacters: .alphanumerics) ?? ""

    // 1. Play; SIGTERM once about 300 KB came from the origin (of 3 MiB trickling at
    // 300 KB/s: mid-stream even on a busy machine).
    let first = try await serve(args)
    let base1 = try #require(first.baseURL)
    let download = Task {
      try await ProcessRunner.run(
        "curl", ["-s", "-o", "/dev/null", base1.absoluteString + "stream?url=" + encoded],
        timeout: 30)
    }
    let deadline = ContinuousClock.now + .seconds(20)
    while origin.bodyBytesSent < 300_000 && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
    }
    let (status, _, log) = await stop(first)
    #expect(status == 0, "stderr: \(log)")
    _ = try await download.value

    // 2. Every stored chunk opens; something but not everything was stored.
    let verify = try await ProcessRunner.run(
      ServeProcess.binary, ["verify", "--vault", dir + "/vault", "--key-file", key])
    #expect(verify.status == 0, "\(verify.text) \(verify.stderr)")
    let stored = try presence(dir + "/vault", url: origin.url("/film.mp4"))
    #expect(stored.count > 0 && stored.count < size / chunk, "stored \(stored.count) chunks")

    // 3. Play again: the whole file, with no stored chunk requested from the origin.
    origin.setBehaviors([], for: "/film.mp4")
    origin.resetStatistics()
    let second = try await serve(args)
    let base2 = try #require(second.baseURL)
    let replay = try await Curl.get(
      try #require(URL(string: base2.absoluteString + "stream?url=" + encoded)))
    #expect(replay.status == 200 && replay.body == source)
    let (status2, _, log2) = await stop(second)
    #expect(status2 == 0, "stderr: \(log2)")
    for record in origin.requests {
      let requested = try #require(chunkRange(record.range, chunk: chunk), "\(record)")
      let refetched = requested.filter { stored.contains($0) }
      #expect(refetched.isEmpty, "chunks \(refetched) fetched again by \(record.range ?? "")")
    }
    let again = try await ProcessRunner.run(
      ServeProcess.binary, ["verify", "--vault", dir + "/vault", "--key-file", key])
    #expect(again.status == 0, "\(again.text) \(again.stderr)")
  }

  /// The chunks recorded as stored for `url`, read with a vault opened in this process.
  func presence(_ vaultDirectory: String, url: URL) throws -> Set<Int> {
    let vault = try Vault.open(at: vaultDirectory, masterKey: try KeyFile.read(at: key))
    let id = try RangeLoader(vault: vault, offline: true).assetID(for: url)
    let map = try vault.reader(for: id).presence
    return Set(map.indices)
  }

  /// The chunks `bytes=a-b` covers.
  func chunkRange(_ header: String?, chunk: Int) -> [Int]? {
    guard let header, let eq = header.firstIndex(of: "="), let dash = header.firstIndex(of: "-"),
      let start = Int(header[header.index(after: eq)..<dash])
    else { return nil }
    let end = Int(header[header.index(after: dash)...]) ?? Int.max / 2
    return Array((start / chunk)...(end / chunk))
  }
}
