import Foundation
import VaultCrypto

extension Vault {
  /// Writes an asset (or the inclusive byte range `range` of it) to a file. The bytes go to
  /// a temporary file beside `path` that is synced and renamed into place only when complete:
  /// an interrupted or failed export never leaves a partial file under the final name.
  /// - Parameters:
  ///   - id: the asset.
  ///   - path: destination file (replaced if it exists).
  ///   - range: inclusive byte offsets, like HTTP; nil for the whole asset.
  ///   - progress: called after each batch.
  /// - Throws: ``VaultError/rangeNotSatisfiable(offset:length:assetLength:)``, chunk errors, I/O errors.
  public func export(
    _ id: AssetID, to path: String, range: ClosedRange<UInt64>? = nil,
    progress: ((OperationProgress) -> Void)? = nil
  ) throws {
    let reader = try reader(for: id)
    let (offset, count) = try Self.resolveRange(range, length: reader.length)
    // Exporting is serving: the lease decides, and an export from the start is a play.
    try authorizeRead(id, from: offset)
    let directory = FileSystem.parent(of: path)
    let base = path.split(separator: "/").last.map(String.init) ?? "export"
    let suffix = try cryptoCall { Bytes.hex(try SecureRandom.bytes(count: 4)) }
    let temp = "\(directory)/.\(base).partial-\(suffix)"
    let fd = posixOpen(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw VaultError.io(operation: "create", path: temp, errno: errno) }
    PartialFiles.register(temp)
    var done = false
    defer {
      if !done { _ = unlink(temp) }
      PartialFiles.unregister(temp)
    }
    do {
      try write(
        reader: reader, offset: offset, count: count, to: fd, name: temp, startWriteback: true,
        progress: progress)
      guard fsync(fd) == 0 else {
        throw VaultError.io(operation: "fsync", path: temp, errno: errno)
      }
    } catch {
      _ = close(fd)
      throw error
    }
    _ = close(fd)
    try FileSystem.move(temp, to: path)
    done = true
    FileSystem.syncDirectory(directory)
  }

  /// Writes an asset (or the inclusive range) to an open descriptor such as stdout.
  public func export(
    _ id: AssetID, toFileDescriptor fd: Int32, range: ClosedRange<UInt64>? = nil,
    progress: ((OperationProgress) -> Void)? = nil
  ) throws {
    let reader = try reader(for: id)
    let (offset, count) = try Self.resolveRange(range, length: reader.length)
    // Exporting is serving: the lease decides, and an export from the start is a play.
    try authorizeRead(id, from: offset)
    try write(
      reader: reader, offset: offset, count: count, to: fd, name: "output",
      startWriteback: false, progress: progress)
  }

  private func write(
    reader: AssetReader, offset: UInt64, count: UInt64, to fd: Int32, name: String,
    startWriteback: Bool, progress: ((OperationProgress) -> Void)?
  ) throws {
    var done: UInt64 = 0
    try reader.forEachPiece(offset: offset, count: count) { piece in
      guard let base = piece.baseAddress else { return }
      var written = 0
      while written < piece.count {
        let n = Foundation.write(fd, base + written, piece.count - written)
        if n < 0 {
          if errno == EINTR { continue }
          throw VaultError.io(operation: "write", path: name, errno: errno)
        }
        written += n
      }
      // Our own temp file: let the disk work while the next batch is opened.
      if startWriteback { FileSystem.startWriteback(fd, at: Int64(done), length: piece.count) }
      done += UInt64(piece.count)
      progress?(OperationProgress(bytesDone: done, bytesTotal: count))
    }
  }

  /// Turns an inclusive range into (offset, count), checking it against the length.
  static func resolveRange(_ range: ClosedRange<UInt64>?, length: UInt64) throws -> (UInt64, UInt64)
  {
    guard let range else { return (0, length) }
    guard range.upperBound < length else {
      throw VaultError.rangeNotSatisfiable(
        offset: range.lowerBound, length: range.upperBound - range.lowerBound + 1,
        assetLength: length)
    }
    return (range.lowerBound, range.upperBound - range.lowerBound + 1)
  }
}
