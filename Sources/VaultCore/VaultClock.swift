import Foundation

/// Where lease checks get the time. The system clock by default; tests and apps with a
/// trusted time source inject their own (`Vault.open(at:masterKey:clock:)`).
public struct VaultClock: Sendable {
  private let read: @Sendable () -> Date

  /// A clock that calls `now` for every reading.
  public init(_ now: @escaping @Sendable () -> Date) { read = now }

  /// The device's wall clock (`Date()`): the user can wind it back (docs/DRM-LITE.md).
  public static let system = VaultClock { Date() }

  /// The current time.
  public func now() -> Date { read() }
}
