import Foundation

/// A result that is set once and awaited once: an origin response's head, which the
/// transport's callbacks deliver and the caller of `send` waits for. The first result set
/// wins; later ones (a failure after the head arrived, say) are ignored.
package final class OneShot<Value: Sendable>: @unchecked Sendable {
  private let lock = NSLock()
  private var result: Result<Value, any Error>?
  private var waiter: CheckedContinuation<Value, any Error>?

  package init() {}

  /// Waits for the result (returns at once if it is already set).
  package func value() async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
      lock.lock()
      if let result {
        lock.unlock()
        continuation.resume(with: result)
      } else {
        waiter = continuation
        lock.unlock()
      }
    }
  }

  /// Sets the result unless one is set already.
  package func resolve(_ result: Result<Value, any Error>) {
    lock.lock()
    guard self.result == nil else {
      lock.unlock()
      return
    }
    self.result = result
    let waiter = self.waiter
    self.waiter = nil
    lock.unlock()
    waiter?.resume(with: result)
  }
}
