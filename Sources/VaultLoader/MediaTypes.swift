import Foundation

/// MIME type → Uniform Type Identifier, for AVFoundation's content information request
/// (which wants UTIs such as `public.mp3`, not MIME types).
public enum MediaTypes {
  private static let table: [String: String] = [
    "audio/mpeg": "public.mp3", "audio/mp3": "public.mp3", "audio/mp4": "public.mpeg-4-audio",
    "audio/x-m4a": "com.apple.m4a-audio", "audio/aac": "public.aac-audio",
    "audio/wav": "com.microsoft.waveform-audio", "audio/x-wav": "com.microsoft.waveform-audio",
    "audio/flac": "org.xiph.flac", "audio/aiff": "public.aiff-audio",
    "video/mp4": "public.mpeg-4", "video/quicktime": "com.apple.quicktime-movie",
    "video/x-m4v": "com.apple.m4v-video", "video/mp2t": "public.mpeg-2-transport-stream",
    "video/mpeg": "public.mpeg", "application/vnd.apple.mpegurl": "public.m3u8-playlist",
    "application/x-mpegurl": "public.m3u8-playlist",
  ]

  /// The UTI for a MIME type (parameters such as `; charset=` ignored), or nil if unknown.
  public static func uniformTypeIdentifier(forMIMEType mime: String) -> String? {
    let base =
      mime.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    return table[base.lowercased()]
  }
}
