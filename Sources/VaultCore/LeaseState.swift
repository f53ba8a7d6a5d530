import Foundation

/// A lease with its mutable state: when the asset was first played, how many plays were
/// counted, and the latest time the lease has seen (a high-water mark that a wound-back
/// clock cannot move back).
public struct LeaseState: Sendable, Equatable, Codable {
  /// The policy.
  public var lease: Lease
  /// When the first read happened, if any.
  public var firstPlayAt: Date?
  /// Plays counted so far.
  public var plays: Int
  /// When the last counted play started, if any.
  public var lastPlayAt: Date?
  /// The latest time recorded by a check: lease time never runs backwards past it.
  public var seenAt: Date

  /// When the lease ends by time: the earlier of `notAfter` and the first-play window's
  /// end (nil while neither applies).
  public var expiresAt: Date? {
    let window = firstPlayAt.flatMap { first in
      lease.maxAgeAfterFirstPlay.map { first.addingTimeInterval($0) }
    }
    switch (lease.notAfter, window) {
    case (let a?, let b?): return min(a, b)
    case (let a?, nil): return a
    case (nil, let b?): return b
    case (nil, nil): return nil
    }
  }

  /// The time a check uses: the clock, but never earlier than what the lease saw before.
  func effectiveTime(_ now: Date) -> Date { max(now, seenAt) }

  /// Why the lease refuses any read at `time` (already an effective time), if it does:
  /// expiry, a closed play window, or the last play's grace period over.
  func denial(at time: Date) -> LeaseDenial? {
    if let notAfter = lease.notAfter, time >= notAfter { return .expired(at: notAfter) }
    if let first = firstPlayAt, let window = lease.maxAgeAfterFirstPlay,
      time >= first.addingTimeInterval(window)
    {
      return .playWindowClosed(at: first.addingTimeInterval(window))
    }
    if let limit = lease.maxPlays, plays >= limit, let last = lastPlayAt,
      time >= last.addingTimeInterval(VaultFormat.lastPlayGrace)
    {
      return .playsExhausted(limit: limit)
    }
    return nil
  }

  /// Whether a read starting at `offset` starts a new play at `time`: it starts in the
  /// first chunk (or nothing was played yet) and no play was counted in the last
  /// ``VaultFormat/playCoalescing`` seconds.
  func startsPlay(offset: UInt64, chunkSize: Int, at time: Date) -> Bool {
    guard offset < UInt64(chunkSize) || plays == 0 else { return false }
    guard let last = lastPlayAt else { return true }
    return time.timeIntervalSince(last) >= VaultFormat.playCoalescing
  }
}
