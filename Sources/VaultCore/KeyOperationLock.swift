#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The exclusive lock that lets one key operation (rotation, re-encryption, retirement) run
/// on a vault at a time, across processes: `flock` on `<vault>/KEYS.lock`. The kernel
/// drops it when the process dies, so a crash never leaves the vault locked.
///
/// Within one process the lock is re-entrant (counted per vault directory), so a caller can
/// hold it around several steps, as `vault key rotate` does around writing the new key
/// file, rotating and swapping key files. Each operation still checks the active key inside
/// its own transaction, so two threads of one process cannot corrupt anything either.
enum KeyOperationLock {
  private struct Held {
    var descriptor: Int32
    var depth: Int
  }

  private static let held = Locked<[String: Held]>([:])

  /// Takes the lock without waiting (or deepens this process's hold on it).
  /// - Throws: ``VaultError/keyOperationBusy(path:)`` if another process holds it.
  static func acquire(directory: String) throws {
    let path = directory + "/" + VaultFormat.keyLockFileName
    try held.withLock { table in
      if var entry = table[path] {
        entry.depth += 1
        table[path] = entry
        return
      }
      let fd = posixOpen(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
      guard fd >= 0 else { throw VaultError.io(operation: "open", path: path, errno: errno) }
      guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
        _ = close(fd)
        throw VaultError.keyOperationBusy(path: path)
      }
      table[path] = Held(descriptor: fd, depth: 1)
    }
  }

  /// Undoes one ``acquire(directory:)``; the last one unlocks.
  static func release(directory: String) {
    let path = directory + "/" + VaultFormat.keyLockFileName
    held.withLock { table in
      guard var entry = table[path] else { return }
      entry.depth -= 1
      if entry.depth > 0 {
        table[path] = entry
        return
      }
      table[path] = nil
      _ = flock(entry.descriptor, LOCK_UN)
      _ = close(entry.descriptor)
    }
  }
}

extension Vault {
  /// Runs `body` holding the vault's key operation lock (`<vault>/KEYS.lock`), which every
  /// key operation takes. Hold it around several calls to keep other processes out between
  /// them; it is re-entrant within this process.
  /// - Throws: ``VaultError/keyOperationBusy(path:)`` if another process holds it, or what
  ///   `body` throws.
  public func withKeyOperationLock<T>(_ body: () throws -> T) throws -> T {
    try KeyOperationLock.acquire(directory: directory)
    defer { KeyOperationLock.release(directory: directory) }
    return try body()
  }
}
