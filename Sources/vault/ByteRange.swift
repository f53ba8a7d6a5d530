import ArgumentParser

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
      ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20),
      ("G", 1 << 30), ("B", 1),
    ]
    for (suffix, multiplier) in units where argument.hasSuffix(suffix) {
      guard let number = Int(argument.dropLast(suffix.count)) else { return nil }
      value = number * multiplier
      return
    }
    guard let number = Int(argument) else { return nil }
    value = number
  }
}
