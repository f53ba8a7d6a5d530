import ArgumentParser
import Foundation

/// An inclusive byte range `START-END` as in HTTP (`START-` means to the end).
struct ByteRange: ExpressibleByArgument {
  let start: UInt64
  let end: UInt64?

  init?(argument: String) {
    let parts = argument.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2, let start = UInt64(parts[0]) else { return nil }
    if parts[1].isEmpty {
      end = nil
    } else {
      guard let end = UInt64(parts[1]), end >= start else { return nil }
      self.end = end
    }
    self.start = start
  }

  /// The closed range within an asset of `length` bytes.
  func resolved(length: UInt64) -> ClosedRange<UInt64> {
    start...(end ?? (length == 0 ? 0 : length - 1))
  }
}

/// A byte count like `65536`, `64KiB`, `1MiB`, `2GiB`.
struct ByteCount: ExpressibleByArgument {
  let value: Int

  init(_ value: Int) { self.value = value }

  init?(argument: String) {
    let units: [(String, Int)] = [
      ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40), ("K", 1 << 10),
      ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40), ("B", 1),
    ]
    for (suffix, multiplier) in units where argument.hasSuffix(suffix) {
      guard let number = Int(argument.dropLast(suffix.count)), number >= 0 else { return nil }
      let (product, overflow) = number.multipliedReportingOverflow(by: multiplier)
      guard !overflow else { return nil }
      value = product
      return
    }
    guard let number = Int(argument) else { return nil }
    value = number
  }
}

/// A duration on the command line: `45s`, `90m`, `12h`, `30d`, `2w` (a bare number is
/// seconds).
struct DurationArgument: ExpressibleByArgument {
  let seconds: TimeInterval

  init(seconds: TimeInterval) { self.seconds = seconds }

  init?(argument: String) {
    let units: [(Character, Double)] = [
      ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800),
    ]
    var text = Substring(argument)
    var multiplier = 1.0
    if let last = text.last, let unit = units.first(where: { $0.0 == last }) {
      multiplier = unit.1
      text = text.dropLast()
    }
    guard let number = Double(text), number >= 0, number.isFinite else { return nil }
    seconds = number * multiplier
  }

  /// `30d`, `12h`, `90m` or `45s`: the largest unit that divides it.
  static func format(_ seconds: TimeInterval) -> String {
    for (unit, size) in [("w", 604_800.0), ("d", 86_400), ("h", 3600), ("m", 60)]
    where seconds >= size && seconds.truncatingRemainder(dividingBy: size) == 0 {
      return "\(Int(seconds / size))\(unit)"
    }
    return "\(Int(seconds))s"
  }
}
