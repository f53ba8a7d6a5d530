import Foundation

/// What `vault list` and `vault info` show of an asset's lease.
public struct LeaseSummary: Sendable, Codable, Equatable {
  /// `active`, or why it refuses reads: `expired`, `play-window-closed`, `plays-exhausted`,
  /// `tampered` (``LeaseDenial/code``).
  public var status: String
  /// Absolute expiry, if any.
  public var notAfter: Date?
  /// First-play window in seconds, if any.
  public var maxAgeAfterFirstPlay: Double?
  /// Play limit, if any.
  public var maxPlays: Int?
  /// When the first play happened, if it did.
  public var firstPlayAt: Date?
  /// Plays counted.
  public var plays: Int
  /// When the lease ends by time, as far as known now.
  public var expiresAt: Date?

  init(state: LeaseState, at now: Date) {
    status = state.denial(at: state.effectiveTime(now))?.code ?? "active"
    notAfter = state.lease.notAfter
    maxAgeAfterFirstPlay = state.lease.maxAgeAfterFirstPlay
    maxPlays = state.lease.maxPlays
    firstPlayAt = state.firstPlayAt
    plays = state.plays
    expiresAt = state.expiresAt
  }

  /// A lease that failed authentication: nothing in it can be believed.
  static let tampered = LeaseSummary(
    status: LeaseDenial.tampered.code, notAfter: nil, maxAgeAfterFirstPlay: nil, maxPlays: nil,
    firstPlayAt: nil, plays: 0, expiresAt: nil)

  private init(
    status: String, notAfter: Date?, maxAgeAfterFirstPlay: Double?, maxPlays: Int?,
    firstPlayAt: Date?, plays: Int, expiresAt: Date?
  ) {
    self.status = status
    self.notAfter = notAfter
    self.maxAgeAfterFirstPlay = maxAgeAfterFirstPlay
    self.maxPlays = maxPlays
    self.firstPlayAt = firstPlayAt
    self.plays = plays
    self.expiresAt = expiresAt
  }
}
