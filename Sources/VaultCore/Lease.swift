import Foundation

/// The policy under which a stored asset may be played offline: an absolute expiry, a
/// window that starts at the first play, and a play count limit. Any field may be absent
/// (no such limit). Stored MACed in the index (`lease` table) and flagged in the asset's
/// sealed metadata, so a lease cannot be edited or dropped without the key (FORMAT.md §5).
public struct Lease: Sendable, Codable, Equatable {
  /// The asset is not served at or after this time.
  public var notAfter: Date?
  /// The asset is not served once this many seconds have passed since its first play.
  public var maxAgeAfterFirstPlay: TimeInterval?
  /// Plays allowed (see ``VaultFormat/playCoalescing`` for what counts as one play).
  public var maxPlays: Int?

  /// Creates a lease; at least one limit should be given.
  public init(
    notAfter: Date? = nil, maxAgeAfterFirstPlay: TimeInterval? = nil, maxPlays: Int? = nil
  ) {
    self.notAfter = notAfter
    self.maxAgeAfterFirstPlay = maxAgeAfterFirstPlay
    self.maxPlays = maxPlays
  }

  /// Throws unless every given limit is usable.
  func validate() throws {
    if let maxAgeAfterFirstPlay, !(maxAgeAfterFirstPlay > 0 && maxAgeAfterFirstPlay.isFinite) {
      throw VaultError.invalidArgument("a first-play window must be a positive duration")
    }
    if let maxPlays, maxPlays < 1 {
      throw VaultError.invalidArgument("a play limit must be at least 1")
    }
    if let notAfter, !notAfter.timeIntervalSince1970.isFinite {
      throw VaultError.invalidArgument("the expiry date is invalid")
    }
  }
}
