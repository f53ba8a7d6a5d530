#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The exclusive lock that lets one key operation (rotation, re-encryption, retirement) run
/// on a vault at a time, across processes: `flock` on `<vault>/KEYS.lock`. The kernel
/// drops it when the process dies, so a crash never leaves the vault locked.
final class KeyOperationLock {
  private let descriptor: Int32

  /// Takes the lock without waiting.
  /// - Throws: ``VaultError/keyOperationBusy(path:)`` if another operation holds it.
  init(directory: String) throws {
    let path = directory + "/" + VaultFormat.keyLockFileName
    let fd = posixOpen(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw VaultError.io(operation: "open", path: path, errno: errno) }
    guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
      _ = close(fd)
      throw VaultError.keyOperationBusy(path: path)
    }
    descriptor = fd
  }

  deinit {
    _ = flock(descriptor, LOCK_UN)
    _ = close(descriptor)
  }
}

extension Vault {
  /// Runs `body` holding the vault's key operation lock.
  func withKeyOperationLock<T>(_ body: () throws -> T) throws -> T {
    let lock = try KeyOperationLock(directory: directory)
    defer { withExtendedLifetime(lock) {} }
    return try body()
  }
}
