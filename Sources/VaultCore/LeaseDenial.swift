import Foundation

/// Why a lease refuses a read (``VaultError/leaseExpired(asset:denial:)``).
public enum LeaseDenial: Sendable, Equatable, CustomStringConvertible {
  /// The lease's `notAfter` has passed.
  case expired(at: Date)
  /// The window that started at the first play has closed.
  case playWindowClosed(at: Date)
  /// Every allowed play has been used.
  case playsExhausted(limit: Int)
  /// The lease record failed authentication or was deleted: it was changed without the key.
  case tampered

  /// A short token for HTTP headers and JSON: `expired`, `play-window-closed`,
  /// `plays-exhausted`, `tampered`.
  public var code: String {
    switch self {
    case .expired: return "expired"
    case .playWindowClosed: return "play-window-closed"
    case .playsExhausted: return "plays-exhausted"
    case .tampered: return "tampered"
    }
  }

  public var description: String {
    let format = ISO8601DateFormatter()
    switch self {
    case .expired(let at): return "its lease expired at \(format.string(from: at))"
    case .playWindowClosed(let at):
      return "its play window closed at \(format.string(from: at))"
    case .playsExhausted(let limit): return "its lease allows \(limit) plays and all were used"
    case .tampered: return "its lease record failed authentication"
    }
  }
}
