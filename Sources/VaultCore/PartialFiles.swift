#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Temporary files an export is writing. A CLI's signal handler calls ``removeAll()`` so
/// an interrupted export leaves nothing behind (it never leaves a file under the final
/// name in any case: exports are renamed into place only when complete).
public enum PartialFiles {
  private static let paths = Locked<Set<String>>([])

  static func register(_ path: String) { _ = paths.withLock { $0.insert(path) } }

  static func unregister(_ path: String) { _ = paths.withLock { $0.remove(path) } }

  /// Deletes every partial file still registered.
  public static func removeAll() {
    for path in paths.withLock({ $0 }) { _ = unlink(path) }
  }
}
