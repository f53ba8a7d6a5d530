import ArgumentParser
import Foundation
import VaultCore

/// `--expires DATE | --for DURATION [--after-first-play DURATION] [--max-plays N]`, shared
/// by `lease`, `import` and `prefetch`.
struct LeaseOptions: ParsableArguments {
  @Option(
    help:
      "Lease: not playable from this time on (ISO 8601, e.g. 2026-12-31T23:59:59Z or 2026-12-31).")
  var expires: DateArgument?

  @Option(
    name: .customLong("for"), help: "Lease: not playable after this long from now (e.g. 48h, 30d).")
  var duration: DurationArgument?

  @Option(help: "Lease: not playable after this long from the first play (e.g. 48h).")
  var afterFirstPlay: DurationArgument?

  @Option(help: "Lease: number of plays allowed.")
  var maxPlays: Int?

  func validate() throws {
    if expires != nil && duration != nil {
      throw ValidationError("give at most one of --expires DATE and --for DURATION")
    }
    if let maxPlays, maxPlays < 1 { throw ValidationError("--max-plays must be at least 1") }
    if let afterFirstPlay, afterFirstPlay.seconds <= 0 {
      throw ValidationError("--after-first-play must be a positive duration")
    }
  }

  /// The lease these options describe, nil if none was given.
  func lease(now: Date) -> Lease? {
    let notAfter = expires?.date ?? duration.map { now.addingTimeInterval($0.seconds) }
    guard notAfter != nil || afterFirstPlay != nil || maxPlays != nil else { return nil }
    return Lease(
      notAfter: notAfter, maxAgeAfterFirstPlay: afterFirstPlay?.seconds, maxPlays: maxPlays)
  }
}

/// An ISO 8601 date and time with a zone (`2026-12-31T23:59:59Z`), or a date (midnight UTC).
struct DateArgument: ExpressibleByArgument {
  let date: Date

  init?(argument: String) {
    let full = ISO8601DateFormatter()
    let dateOnly = ISO8601DateFormatter()
    dateOnly.formatOptions = [.withFullDate]
    guard let date = full.date(from: argument) ?? dateOnly.date(from: argument) else {
      return nil
    }
    self.date = date
  }
}

/// One line describing a lease, for `list`, `info` and `lease`.
enum LeaseText {
  static func describe(_ lease: LeaseSummary?) -> String {
    guard let lease else { return "-" }
    var parts = [lease.status]
    if let end = lease.expiresAt { parts.append("until \(JSONOutput.iso8601(end))") }
    if let window = lease.maxAgeAfterFirstPlay, lease.firstPlayAt == nil {
      parts.append("\(DurationArgument.format(window)) from first play")
    }
    if let max = lease.maxPlays { parts.append("\(lease.plays)/\(max) plays") }
    return parts.joined(separator: ", ")
  }
}
