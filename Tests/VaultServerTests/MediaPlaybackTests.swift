import Foundation
import LoopbackOrigin
import Testing
import VaultServer

/// ffprobe and ffmpeg read real media through the server; decoded frames must be identical
/// to decoding the original file with the same arguments (seeks included).
@Suite(
  "Media playback (ffmpeg, ffprobe)",
  .enabled(
    if: ProcessRunner.hasFFmpeg, "ffmpeg/ffprobe not installed (scripts/install-deps --test)")
)
struct MediaPlaybackTests {
  /// `-ss` seeks (nil: from the start) and durations decoded with `-f framemd5`.
  static let passes: [(seek: String?, duration: String)] = [
    (nil, "1.5"), ("3.2", "1.5"), ("0.8", "1"),
  ]

  func framemd5(_ input: String, seek: String?, duration: String) async throws -> String {
    var args = ["-v", "error", "-nostdin"]
    if let seek { args += ["-ss", seek] }
    args += ["-i", input, "-t", duration, "-f", "framemd5", "-"]
    let result = try await ProcessRunner.run("ffmpeg", args, timeout: 60)
    #expect(result.status == 0, "ffmpeg \(input): \(result.stderr)")
    return result.text
  }

  func probe(_ input: String) async throws -> String {
    let result = try await ProcessRunner.run(
      "ffprobe",
      [
        "-v", "error", "-show_entries", "format=duration,format_name:stream=codec_name,duration",
        "-of", "compact", input,
      ])
    #expect(result.status == 0, "ffprobe \(input): \(result.stderr)")
    return result.text
  }

  /// Compares probing and decoding `url` with the same on `file`.
  func expectSameMedia(_ url: URL, as file: String) async throws {
    let expectedProbe = try await probe(file)
    #expect(!expectedProbe.isEmpty)
    #expect(try await probe(url.absoluteString) == expectedProbe)
    for pass in Self.passes {
      let expected = try await framemd5(file, seek: pass.seek, duration: pass.duration)
      #expect(expected.split(separator: "\n").count > 10)
      let got = try await framemd5(url.absoluteString, seek: pass.seek, duration: pass.duration)
      #expect(got == expected, "seek \(pass.seek ?? "none") differs for \(url.lastPathComponent)")
    }
  }

  @Test(arguments: ["mp4", "mp3"])
  func throughStreamAndAssets(_ kind: String) async throws {
    let files = try await MediaFiles.shared.get()
    let file = kind == "mp4" ? files.mp4 : files.mp3
    let type = kind == "mp4" ? "video/mp4" : "audio/mpeg"
    let f = try await ServerFixture.start()
    do {
      // stream?url=: the origin serves the file; the vault starts cold.
      f.origin.serve("/media.\(kind)", file: file, contentType: type)
      let streamURL = f.server.url(forOrigin: f.origin.url("/media.\(kind)?token=abc"))
      try await expectSameMedia(streamURL, as: file)
      // Once the whole file went through (curl), playing again touches no origin.
      let whole = try await Curl.get(streamURL)
      #expect(whole.body == [UInt8](try Data(contentsOf: URL(fileURLWithPath: file))))
      let sent = f.origin.bodyBytesSent
      let requests = f.origin.requests.count
      try await expectSameMedia(streamURL, as: file)
      #expect(f.origin.requests.count == requests)
      #expect(f.origin.bodyBytesSent == sent)
      // assets/{id}: the file imported.
      _ = try f.vault.importFile(at: file, name: "imported.\(kind)", contentType: type)
      let id = try f.vault.resolve("imported.\(kind)").hex
      try await expectSameMedia(f.server.url(forAsset: id), as: file)
    } catch {
      await f.stop()
      throw error
    }
    await f.stop()
  }
}
