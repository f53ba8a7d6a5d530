import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What the origin serves at one path.
struct Resource: Sendable {
  /// Where the body comes from.
  enum Body: Sendable {
    case bytes([UInt8])
    /// A file read at request time, so its current length and modification time are used.
    case file(String)
  }

  var body: Body
  var contentType: String?
  /// The quoted entity tag; nil for a file means one derived from its size and mtime.
  var etag: String?
  var lastModified: Date?
}

/// A representation's metadata as one response sees it.
struct Representation: Sendable {
  var length: Int
  var contentType: String?
  var etag: String?
  var lastModified: Date?
}

/// The body bytes of one response: memory, or an open file the response closes.
enum BodySource {
  case bytes([UInt8])
  case file(descriptor: Int32)

  /// Closes the file, if any.
  func close() {
    if case .file(let descriptor) = self { _ = systemClose(descriptor) }
  }
}

extension Resource {
  /// Opens the body for one response; nil when a file can no longer be read.
  func open() -> (Representation, BodySource)? {
    switch body {
    case .bytes(let bytes):
      let representation = Representation(
        length: bytes.count, contentType: contentType, etag: etag, lastModified: lastModified)
      return (representation, .bytes(bytes))
    case .file(let path):
      let descriptor = systemOpen(path, O_RDONLY | O_CLOEXEC)
      guard descriptor >= 0 else { return nil }
      var info = stat()
      guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
        _ = systemClose(descriptor)
        return nil
      }
      #if canImport(Darwin)
        let modified = Int(info.st_mtimespec.tv_sec)
      #else
        let modified = Int(info.st_mtim.tv_sec)
      #endif
      let length = Int(info.st_size)
      let representation = Representation(
        length: length, contentType: contentType,
        etag: etag ?? "\"\(String(modified, radix: 16))-\(String(length, radix: 16))\"",
        lastModified: Date(timeIntervalSince1970: TimeInterval(modified)))
      return (representation, .file(descriptor: descriptor))
    }
  }
}
