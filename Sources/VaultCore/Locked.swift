import Foundation

/// A value behind a lock: the shared mutable state of the vault's types, its server and
/// its command line (counters, registries, signal state).
public final class Locked<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value

  /// Wraps `value`.
  public init(_ value: Value) { self.value = value }

  /// Runs `body` with exclusive access to the value.
  public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
