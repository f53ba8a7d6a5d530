import Foundation
import VaultCore

/// How `vault key rotate` replaces the key file at `--key-file` (README "Key rotation"):
///
/// 1. the new key is written to `KEY.new` (temp name, fsync, hard link: never overwritten);
/// 2. the vault rewraps every data key under it in one transaction;
/// 3. `KEY` is hard-linked to `KEY.old-<old key id>` (the old key, decrypt-only now);
/// 4. `KEY.new` is renamed over `KEY`.
///
/// At every moment `KEY` holds the old key or the new one, and both open the vault until
/// the old key is retired. A rerun after a crash between 2 and 4 finds `KEY.new` holding
/// the vault's active key and only finishes steps 3 and 4.
struct KeyFileSwap {
  let keyPath: String

  /// Where the new key waits until the index records it.
  var stagedPath: String { keyPath + ".new" }

  /// Where the old key is kept after the swap.
  func backupPath(oldKeyID: String) -> String { keyPath + ".old-" + oldKeyID }

  /// Steps 3 and 4. `keepBackup` is false when the old key was retired (it opens nothing).
  func swap(oldKeyID: String, keepBackup: Bool) throws {
    let directory = parent(of: keyPath)
    if keepBackup {
      let backup = backupPath(oldKeyID: oldKeyID)
      let temp = backup + ".tmp-\(getpid())"
      _ = unlink(temp)
      guard link(keyPath, temp) == 0 else { throw failure("link", backup) }
      guard rename(temp, backup) == 0 else {
        _ = unlink(temp)
        throw failure("rename", backup)
      }
      syncDirectory(directory)
      CrashPoint.reach("rotate-after-backup")
    }
    guard rename(stagedPath, keyPath) == 0 else { throw failure("rename", keyPath) }
    syncDirectory(directory)
    CrashPoint.reach("rotate-after-swap")
  }

  private func failure(_ operation: String, _ path: String) -> CLIError {
    CLIError("\(operation) \(path): \(String(cString: strerror(errno)))")
  }

  private func parent(of path: String) -> String {
    let url = URL(fileURLWithPath: path)
    return url.deletingLastPathComponent().path
  }

  private func syncDirectory(_ path: String) {
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { return }
    _ = fsync(fd)
    _ = close(fd)
  }
}
