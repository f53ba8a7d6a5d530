import ArgumentParser
import Foundation
import LoopbackOrigin
import OriginClient
import VaultCore
import VaultLoader
import VaultServer

extension VaultCommand {
  /// `vault demo`: the README's first command. Streams a real MP4 from a loopback origin
  /// through `vault serve`'s proxy into a demo vault (published demo key), the way a player
  /// asks for it, twice, and shows what came from where.
  struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "demo",
      abstract:
        "Stream a sample MP4 through the proxy into a demo vault (demo key: NOT for real data).",
      discussion: """
        Uses Keys/demo.key (or the same key built into the binary). A vault at --vault that \
        an earlier demo made is replaced. On a terminal the proxy keeps serving afterwards \
        (play the printed URL with ffplay or mpv) until Enter or Ctrl-C; otherwise it stops \
        at once unless --serve gives seconds.
        """)

    @Option(help: "Demo vault directory.")
    var vault = "demo-vault"

    @Option(
      help: "Seconds to keep serving after the demo (default: until Enter on a terminal, else 0).")
    var serve: Int?

    func run() async throws {
      try await reportingErrorsAsync {
        let key = try DemoKey.load()
        try replaceEarlierDemo(key: key)
        let media = DemoMedia.load()
        print("vault demo — demo key \(key.keyID) (published in Keys/: never use it for real data)")
        let store = try Vault.create(at: vault, masterKey: key)
        print("1. created \(vault)/ (chunk size \(store.chunkSize / 1024) KiB)")

        let origin = try LoopbackOrigin()
        defer { origin.stop() }
        origin.serve(
          "/" + media.name, bytes: media.bytes, contentType: media.contentType,
          etag: "\"demo-1\"")
        let originURL = origin.url("/" + media.name)
        print(
          "2. origin: \(originURL.absoluteString) serves \(media.name) "
            + "(\(formatBytes(UInt64(media.bytes.count))), \(media.description))")

        let server = try await VaultServer.start(vault: store)
        let streamURL = server.url(forOrigin: originURL)
        print("3. proxy: \(server.baseURL.absoluteString)  (random token in the path)")

        let player = DemoPlayer(url: streamURL, expected: media.bytes)
        // The player's own HTTP client starts up on its first request (tens of ms): pay
        // that on a request the proxy refuses (404), so pass 1's first byte is the proxy's.
        await player.warmUp(server.baseURL.appendingPathComponent("warm-up"))
        var passes: [DemoPass] = []
        for (number, label) in [(4, "cold"), (5, "warm")] {
          origin.resetStatistics()
          let before = (await server.loader.statistics, store.statistics)
          let pass = try await player.play()
          try await server.loader.flush()
          let after = (await server.loader.statistics, store.statistics)
          // What the loader passed on from the origin; everything else came from the vault
          // (the proxy reads fully stored ranges straight from it).
          let relayed =
            (after.0.bytesDelivered - after.0.bytesFromCache)
            - (before.0.bytesDelivered - before.0.bytesFromCache)
          let fromCache = UInt64(pass.bytes) - min(UInt64(pass.bytes), relayed)
          let opened = after.1.chunksOpened - before.1.chunksOpened
          print(
            "\(number). pass \(number - 3) (\(label)), a player's requests: \(pass.summary)")
          print(
            "   from the origin \(formatBytes(UInt64(origin.bodyBytesSent))) in "
              + "\(origin.requests.count) requests; from the vault \(formatBytes(fromCache)); "
              + "\(opened) chunks opened; first byte after \(DemoPlayer.ms(pass.firstByte)), "
              + "median \(DemoPlayer.ms(pass.medianFirstByte))")
          passes.append(pass)
        }
        let warmFromOrigin = origin.bodyBytesSent

        var step = 6
        if let probe = DemoProbe.describe(streamURL) {
          print("\(step). ffprobe through the proxy: \(probe)")
          step += 1
        }
        let results = try store.verify()
        let chunks = results.reduce(0) { $0 + $1.chunksChecked }
        print(
          "\(step). verify: \(results.allSatisfy(\.ok) ? "ok" : "FAILED"), "
            + "\(chunks) chunks authenticated")
        step += 1
        let leaks = try DemoSample.find(media.marker, in: vault)
        print(
          "\(step). plaintext at rest: \"\(String(decoding: media.marker, as: UTF8.self))\" "
            + "(in the MP4) found in \(leaks.count) vault files"
            + (leaks.isEmpty ? " (sealed)" : ": \(leaks)"))
        step += 1
        do {
          _ = try Vault.open(at: vault, masterKey: try MasterKey.generate())
          print("\(step). wrong key: OPENED (bug)")
        } catch {
          print("\(step). wrong key: refused — \(error)")
        }

        let assetURL = server.url(forAsset: media.name)
        print("\nPlay it while the proxy runs (the vault now holds every chunk):")
        print("  ffplay '\(assetURL.absoluteString)'")
        print("  mpv '\(streamURL.absoluteString)'")
        print("Then: vault list --vault \(vault) --key-file Keys/demo.key")
        guard passes.allSatisfy(\.correct), warmFromOrigin == 0, results.allSatisfy(\.ok),
          leaks.isEmpty
        else {
          await server.shutdown()
          throw CLIError("the demo found a problem (see above)")
        }
        try await keepServing()
        await server.shutdown()
      }
    }

    /// Replaces only a vault an earlier demo made: one the demo key opens.
    private func replaceEarlierDemo(key: MasterKey) throws {
      guard FileManager.default.fileExists(atPath: vault) else { return }
      do {
        _ = try Vault.open(at: vault, masterKey: key)
      } catch {
        throw CLIError(
          "\(vault) exists and is not a demo vault (\(error)); pick another --vault")
      }
      try FileManager.default.removeItem(atPath: vault)
    }

    /// Waits while a user plays the URLs: --serve seconds, or Enter on a terminal.
    private func keepServing() async throws {
      let interactive = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
      let seconds = serve ?? (interactive ? -1 : 0)
      if seconds == 0 { return }
      if seconds > 0 {
        print("Serving for \(seconds) s...")
        try await Task.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
        return
      }
      print("Serving; press Enter (or Ctrl-C) to stop.")
      await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        Thread {
          _ = readLine()
          done.resume()
        }.start()
      }
    }
  }
}

/// What one pass of the player pattern saw.
struct DemoPass {
  var requests = 0
  var bytes = 0
  var firstByte = 0.0
  var firstBytes: [Double] = []
  var correct = true

  var medianFirstByte: Double { BenchFormat.quantile(firstBytes.sorted(), 0.5) }
  var summary: String {
    "\(requests) requests, \(formatBytes(UInt64(bytes))) received"
      + (correct ? ", every byte equal to the file" : ", WRONG BYTES")
  }
}

/// Asks for a media file the way AVPlayer does: a 2-byte probe, an open-ended read cut
/// short, a seek forward, a seek back, then playing through to the end.
struct DemoPlayer {
  let url: URL
  let expected: [UInt8]
  let client = NIOHTTPOrigin(idleTimeout: 10)

  /// One request whose answer is ignored, so the client is started before timing.
  func warmUp(_ url: URL) async {
    guard let response = try? await client.send(OriginRequest(url: url, rangeStart: 0, rangeEnd: 0))
    else { return }
    do {
      for try await _ in response.body {}
    } catch {}
  }

  func play() async throws -> DemoPass {
    let size = UInt64(expected.count)
    let steps: [(start: UInt64, end: UInt64?, take: Int?)] = [
      (0, 1, nil),  // probe
      (0, nil, 256 << 10),  // bytes=0- , cancelled after 256 KiB
      (size * 6 / 10, nil, 128 << 10),  // seek forward
      (size / 10, size / 10 + (100 << 10), nil),  // seek back
      (256 << 10, nil, nil),  // play through to the end
    ]
    var pass = DemoPass()
    for step in steps {
      let start = Date()
      let response = try await client.send(
        OriginRequest(url: url, rangeStart: step.start, rangeEnd: step.end))
      guard response.status == 206 else {
        response.cancel()
        throw CLIError("the proxy answered \(response.status) to bytes=\(step.start)-")
      }
      var received: [UInt8] = []
      var first: Double?
      for try await piece in response.body {
        if first == nil { first = Date().timeIntervalSince(start) }
        received += piece
        if let take = step.take, received.count >= take { break }
      }
      response.cancel()
      let offset = Int(step.start)
      let end = min(offset + received.count, expected.count)
      pass.correct = pass.correct && received[...] == expected[offset..<end]
      pass.requests += 1
      pass.bytes += received.count
      pass.firstBytes.append(first ?? 0)
      if pass.requests == 1 { pass.firstByte = first ?? 0 }
    }
    return pass
  }

  static func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
}

/// `ffprobe` on a URL, when ffprobe is installed: codecs, size and duration.
enum DemoProbe {
  static func describe(_ url: URL) -> String? {
    guard let ffprobe = Subprocess.find("ffprobe") else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ffprobe)
    process.arguments = [
      "-v", "error", "-show_entries", "stream=codec_name,width,height:format=duration",
      "-of", "default=noprint_wrappers=1", url.absoluteString,
    ]
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    var fields: [String: [String]] = [:]
    for line in text.split(separator: "\n") {
      let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
      if parts.count == 2 { fields[parts[0], default: []].append(parts[1]) }
    }
    let codecs = (fields["codec_name"] ?? []).joined(separator: " + ")
    var size: String?
    if let width = fields["width"]?.first, let height = fields["height"]?.first {
      size = "\(width)x\(height)"
    }
    let duration = fields["duration"]?.first.flatMap(Double.init).map {
      String(format: "%.1f s", $0)
    }
    return [codecs, size, duration].compactMap { $0 }.joined(separator: ", ")
  }
}

/// The demo's media: the MP4 shipped with the binary, or a generated WAV if it is missing.
struct DemoMedia {
  let name: String
  let bytes: [UInt8]
  let contentType: String
  let description: String
  /// Bytes that appear in the plaintext and must not appear in the vault's files.
  let marker: [UInt8]

  static func load() -> DemoMedia {
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    let candidates = [
      executable.deletingLastPathComponent().appendingPathComponent(
        "vault_vault.resources/demo-sample.mp4"
      ).path,
      Bundle.main.bundlePath + "/vault_vault.resources/demo-sample.mp4",
      "Sources/vault/Resources/demo-sample.mp4",
    ]
    for path in candidates {
      if let data = FileManager.default.contents(atPath: path) {
        return DemoMedia(
          name: "sample.mp4", bytes: Array(data), contentType: "video/mp4",
          description: "H.264 + AAC, 30 s", marker: Array("vault demo sample".utf8))
      }
    }
    return wave()
  }

  /// 20 s of a 440 Hz tone as 16-bit mono WAV: playable anywhere.
  static func wave() -> DemoMedia {
    let rate = 22_050
    let samples = rate * 20
    var out: [UInt8] = []
    func le32(_ v: Int) { out += withUnsafeBytes(of: UInt32(v).littleEndian, Array.init) }
    func le16(_ v: Int) { out += withUnsafeBytes(of: UInt16(v).littleEndian, Array.init) }
    out += Array("RIFF".utf8)
    le32(36 + samples * 2)
    out += Array("WAVEfmt ".utf8)
    le32(16)
    le16(1)
    le16(1)
    le32(rate)
    le32(rate * 2)
    le16(2)
    le16(16)
    out += Array("data".utf8)
    le32(samples * 2)
    for n in 0..<samples {
      let value = Int(sin(Double(n) * 2 * .pi * 440 / Double(rate)) * 12_000)
      le16(value & 0xFFFF)
    }
    return DemoMedia(
      name: "tone.wav", bytes: out, contentType: "audio/wav",
      description: "PCM WAV, 20 s (the shipped MP4 was not found)", marker: Array("WAVEfmt".utf8))
  }
}

extension AssetInfo {
  /// The typed id of this asset.
  var idValue: AssetID {
    get throws {
      guard let id = AssetID(hex: id) else { throw CLIError("malformed asset id \(id)") }
      return id
    }
  }
}

/// A deterministic sample with a recognisable plaintext marker every 64 KiB.
enum DemoSample {
  static let marker = "VAULT-DEMO-PLAINTEXT-MARKER"

  static func make(size: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: size)
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for i in 0..<size {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      bytes[i] = UInt8(truncatingIfNeeded: state >> 56)
    }
    let markerBytes = Array(marker.utf8)
    var position = 0
    while position + markerBytes.count <= size {
      bytes.replaceSubrange(position..<(position + markerBytes.count), with: markerBytes)
      position += 65_536
    }
    return bytes
  }

  /// Files under `directory` that contain the marker.
  static func findMarker(in directory: String) throws -> [String] {
    try find(Array(marker.utf8), in: directory)
  }

  /// Files under `directory` that contain `bytes`.
  static func find(_ bytes: [UInt8], in directory: String) throws -> [String] {
    let needle = Data(bytes)
    var found: [String] = []
    let enumerator = FileManager.default.enumerator(atPath: directory)
    while let relative = enumerator?.nextObject() as? String {
      let path = directory + "/" + relative
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
        !isDirectory.boolValue
      else { continue }
      if let data = FileManager.default.contents(atPath: path), data.range(of: needle) != nil {
        found.append(relative)
      }
    }
    return found
  }
}

/// The published demo key (same bytes as Keys/demo.key). For the demo and tests only.
enum DemoKey {
  static let text = """
    # PUBLISHED DEMO KEY: used by the README quickstart (`vault demo`) and the tests only.
    # Everyone has this key. Never protect real data with it; run `vault init` for a real one.
    vault-key 1
    id 13edc813c83d4a24
    key Be8w1LeigTPYD3AVcOQVzj3LER6FrdLve9iuVnK/gck=
    """

  /// Keys/demo.key when run from the repository, else the built-in copy.
  static func load() throws -> MasterKey {
    if FileManager.default.fileExists(atPath: "Keys/demo.key") {
      return try KeyFile.read(at: "Keys/demo.key")
    }
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
      "vault-demo-key-\(getpid())"
    ).path
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try KeyFile.read(at: path)
  }
}
