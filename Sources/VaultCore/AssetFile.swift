internal import CPosixShims

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// One open asset file: positioned reads and writes, fsync, and an advisory lock that
/// marks "a writer is working on this file" across processes (flock).
final class AssetFile {
  let path: String
  private(set) var descriptor: Int32

  private init(path: String, descriptor: Int32) {
    self.path = path
    self.descriptor = descriptor
  }

  deinit {
    if descriptor >= 0 { _ = close(descriptor) }
  }

  /// Opens an existing asset file for reading.
  static func openForReading(_ path: String) throws -> AssetFile {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw VaultError.io(operation: "open", path: path, errno: errno) }
    return AssetFile(path: path, descriptor: fd)
  }

  /// Creates a new asset file (mode 0600) and takes its writer lock. An existing file that
  /// a writer holds is busy; one that no writer holds and `isRecorded()` says the index does
  /// not own is a leftover of a crash and is replaced; one the index owns is a duplicate.
  static func createForWriting(
    _ path: String, asset: String, isRecorded: () throws -> Bool
  ) throws -> AssetFile {
    // Create and lock the file under a private name, then link it into place: the file is
    // never visible under `path` without its writer lock, so no other process can mistake
    // a file being written for a crash leftover (open + flock are two steps otherwise).
    let temp = "\(path).new-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let fd = open(temp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw VaultError.io(operation: "create", path: temp, errno: errno) }
    defer { _ = unlink(temp) }
    guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
      _ = close(fd)
      throw VaultError.assetBusy(asset)
    }
    for _ in 0..<3 {
      if link(temp, path) == 0 { return AssetFile(path: path, descriptor: fd) }
      guard errno == EEXIST else {
        let code = errno
        _ = close(fd)
        throw VaultError.io(operation: "link", path: path, errno: code)
      }
      let existing = open(path, O_RDWR | O_CLOEXEC)
      guard existing >= 0 else { continue }
      guard flock(existing, LOCK_EX | LOCK_NB) == 0 else {
        _ = close(existing)
        _ = close(fd)
        throw VaultError.assetBusy(asset)
      }
      // Nobody writes it. A writer records the asset before it releases the lock, so if the
      // index does not own the file now, it is the leftover of a crash: replace it.
      if try isRecorded() {
        _ = close(existing)
        _ = close(fd)
        throw VaultError.duplicateAsset(asset)
      }
      _ = unlink(path)
      _ = close(existing)
    }
    _ = close(fd)
    throw VaultError.assetBusy(asset)
  }

  /// Opens an existing asset file to continue writing it, taking its writer lock.
  /// - Throws: ``VaultError/assetBusy(_:)`` if another writer holds it.
  static func openForWriting(_ path: String, asset: String) throws -> AssetFile {
    let fd = open(path, O_RDWR | O_CLOEXEC)
    guard fd >= 0 else { throw VaultError.io(operation: "open", path: path, errno: errno) }
    guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
      _ = close(fd)
      throw VaultError.assetBusy(asset)
    }
    return AssetFile(path: path, descriptor: fd)
  }

  /// Whether another process holds the writer lock of the file at `path`.
  static func isLockedByWriter(_ path: String) -> Bool {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { _ = close(fd) }
    if flock(fd, LOCK_SH | LOCK_NB) == 0 {
      _ = flock(fd, LOCK_UN)
      return false
    }
    return true
  }

  /// Reads exactly `buffer.count` bytes at `offset`; returns the count actually read
  /// (short only at end of file).
  func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
    guard let base = buffer.baseAddress else { return 0 }
    var done = 0
    while done < buffer.count {
      let n = pread(descriptor, base + done, buffer.count - done, off_t(offset) + off_t(done))
      if n < 0 {
        if errno == EINTR { continue }
        throw VaultError.io(operation: "read", path: path, errno: errno)
      }
      if n == 0 { break }
      done += n
    }
    return done
  }

  /// Writes all of `buffer` at `offset`.
  func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws {
    guard let base = buffer.baseAddress else { return }
    var done = 0
    while done < buffer.count {
      let n = pwrite(descriptor, base + done, buffer.count - done, off_t(offset) + off_t(done))
      if n < 0 {
        if errno == EINTR { continue }
        throw VaultError.io(operation: "write", path: path, errno: errno)
      }
      done += n
    }
  }

  /// Asks the kernel to start writing [offset, offset+length) to disk now, without waiting,
  /// so the final ``sync()`` finds little left to do. Advisory: errors are ignored.
  func startWriteback(at offset: Int64, length: Int) {
    FileSystem.startWriteback(descriptor, at: offset, length: length)
  }

  /// Flushes written data to stable storage.
  func sync() throws {
    guard fsync(descriptor) == 0 else {
      throw VaultError.io(operation: "fsync", path: path, errno: errno)
    }
  }

  /// Size of the file in bytes.
  func size() throws -> Int64 {
    var info = stat()
    guard fstat(descriptor, &info) == 0 else {
      throw VaultError.io(operation: "stat", path: path, errno: errno)
    }
    return Int64(info.st_size)
  }
}

/// `open(2)` under a name no Swift type shadows (``Vault/open(at:masterKey:)`` does).
func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
  open(path, flags, mode)
}

/// Small POSIX helpers for paths.
enum FileSystem {
  /// Starts writeback of a byte range of `fd` (Linux `sync_file_range`); advisory.
  static func startWriteback(_ fd: Int32, at offset: Int64, length: Int) {
    _ = CPosixShims_startWriteback(fd, off_t(offset), off_t(length))
  }

  static func exists(_ path: String) -> Bool {
    access(path, F_OK) == 0
  }

  static func makeDirectory(_ path: String) throws {
    if mkdir(path, 0o700) != 0 && errno != EEXIST {
      throw VaultError.io(operation: "mkdir", path: path, errno: errno)
    }
  }

  /// fsyncs a directory so a created, renamed or removed entry survives a crash.
  static func syncDirectory(_ path: String) {
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    _ = close(fd)
  }

  /// Size of the file at `path`, nil if it cannot be stat'ed.
  static func size(of path: String) -> Int64? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int64(info.st_size)
  }

  /// Seconds since the file at `path` was last modified, nil if it cannot be stat'ed.
  static func age(of path: String, now: Double) -> Double? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    #if canImport(Darwin)
      return now - Double(info.st_mtimespec.tv_sec)
    #else
      return now - Double(info.st_mtim.tv_sec)
    #endif
  }

  static func remove(_ path: String) {
    _ = unlink(path)
  }

  static func move(_ from: String, to: String) throws {
    guard rename(from, to) == 0 else {
      throw VaultError.io(operation: "rename", path: to, errno: errno)
    }
  }

  static func parent(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    let parent = String(path[..<slash])
    return parent.isEmpty ? "/" : parent
  }

  static func listDirectory(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafePointer(to: entry.pointee.d_name) {
        $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }
}
