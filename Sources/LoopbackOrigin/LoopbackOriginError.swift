/// A socket call failed while the origin was starting.
public struct LoopbackOriginError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The call that failed (`socket`, `bind`, `listen`, ...).
  public var operation: String
  /// The `errno` it set.
  public var code: Int32

  /// Creates an error.
  public init(operation: String, code: Int32) {
    self.operation = operation
    self.code = code
  }

  /// `bind failed: errno 98`.
  public var description: String { "LoopbackOrigin: \(operation) failed: errno \(code)" }
}
