import Foundation

/// What the loader knows about an origin resource: probed once with `GET Range: bytes=0-1`
/// (as AVPlayer does) and then kept, sealed, in the vault.
public struct ContentInfo: Sendable, Equatable {
  /// Total length in bytes.
  public var length: UInt64
  /// MIME type from the origin, if any.
  public var contentType: String?
  /// Whether the origin answers range requests with 206.
  public var acceptsRanges: Bool
  /// ETag (preferred) or Last-Modified, sent back as `If-Range`.
  public var validator: String?

  /// Creates content info.
  public init(length: UInt64, contentType: String?, acceptsRanges: Bool, validator: String?) {
    self.length = length
    self.contentType = contentType
    self.acceptsRanges = acceptsRanges
    self.validator = validator
  }

  /// The Uniform Type Identifier for Apple players (AVAssetResourceLoadingContentInformationRequest).
  public var uniformTypeIdentifier: String? {
    contentType.flatMap { MediaTypes.uniformTypeIdentifier(forMIMEType: $0) }
  }
}

/// A parsed `Content-Range: bytes a-b/len` (or `bytes */len`).
struct ContentRange: Equatable {
  var start: UInt64?
  var end: UInt64?
  var total: UInt64?

  init?(_ header: String) {
    let trimmed = header.trimmingCharacters(in: .whitespaces)
    guard trimmed.lowercased().hasPrefix("bytes") else { return nil }
    let rest = trimmed.dropFirst(5).trimmingCharacters(in: .whitespaces)
    let parts = rest.split(separator: "/", maxSplits: 1)
    guard parts.count == 2 else { return nil }
    total = parts[1] == "*" ? nil : UInt64(parts[1])
    if parts[1] != "*" && total == nil { return nil }
    if parts[0] == "*" {
      start = nil
      end = nil
    } else {
      let bounds = parts[0].split(separator: "-", maxSplits: 1)
      guard bounds.count == 2, let s = UInt64(bounds[0]), let e = UInt64(bounds[1]), s <= e
      else { return nil }
      start = s
      end = e
    }
  }
}

extension OriginResponse {
  /// The validator to send back in `If-Range`: a strong ETag, else Last-Modified.
  var validator: String? {
    if let etag = header("etag"), !etag.hasPrefix("W/") { return etag }
    return header("last-modified")
  }
}
