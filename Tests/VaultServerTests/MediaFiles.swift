import Foundation

/// A real MP4 (H.264 or MPEG-4 part 2 video + AAC) and a real MP3 (or MP2 where LAME is
/// missing), generated once per test run with ffmpeg's lavfi sources.
actor MediaFiles {
  static let shared = MediaFiles()

  struct Files {
    let mp4: String
    let mp3: String
  }

  private var files: Files?

  func get() async throws -> Files {
    if let files { return files }
    let dir = FileManager.default.temporaryDirectory
      .appendingPathComponent("vault-media-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let encoders = try await ProcessRunner.run("ffmpeg", ["-hide_banner", "-encoders"]).text
    let video =
      encoders.contains(" libx264 ")
      ? ["-c:v", "libx264", "-preset", "ultrafast", "-g", "25"] : ["-c:v", "mpeg4", "-g", "25"]
    let audio = encoders.contains(" libmp3lame ") ? ["-c:a", "libmp3lame"] : ["-c:a", "mp2"]
    let mp4 = dir + "/clip.mp4"
    let mp3 = dir + "/tone.mp3"
    let makeMP4 = try await ProcessRunner.run(
      "ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=6:size=320x240:rate=25",
        "-f", "lavfi", "-i", "sine=frequency=440:duration=6",
      ] + video
        + ["-c:a", "aac", "-movflags", "+faststart", mp4])
    guard makeMP4.status == 0 else { throw MediaError(message: makeMP4.stderr) }
    let makeMP3 = try await ProcessRunner.run(
      "ffmpeg",
      ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=330:duration=8"] + audio + [
        "-b:a", "128k", mp3,
      ])
    guard makeMP3.status == 0 else { throw MediaError(message: makeMP3.stderr) }
    let made = Files(mp4: mp4, mp3: mp3)
    files = made
    return made
  }

  struct MediaError: Error { let message: String }
}
