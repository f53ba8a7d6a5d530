/// The `Range` request header (RFC 9110 section 14.2), resolved against a representation
/// length.
enum RangeHeader {
  /// One `range-spec` of a `bytes=` range set.
  enum Spec: Equatable {
    /// `first-last` (`last` nil for `first-`).
    case fromTo(first: Int, last: Int?)
    /// `-length`: the last `length` bytes.
    case suffix(length: Int)
  }

  /// What a `Range` header asks of a representation.
  enum Resolution: Equatable {
    /// No range, or one to ignore (malformed, another unit, several satisfiable ranges):
    /// answer 200 with the whole representation.
    case full
    /// Answer 206 with these bytes.
    case partial(ClosedRange<Int>)
    /// No range overlaps the representation: answer 416.
    case unsatisfiable
  }

  /// More ranges than this make the header ignored.
  static let maxSpecs = 100

  /// Parses `bytes=...` into its specs; nil when the field is malformed or not in bytes.
  static func parse(_ value: String) -> [Spec]? {
    let trimmed = value.trimmingOWS()
    guard let equals = trimmed.firstIndex(of: "=") else { return nil }
    guard trimmed[..<equals].lowercased() == "bytes" else { return nil }
    var specs: [Spec] = []
    for element in trimmed[trimmed.index(after: equals)...].split(
      separator: ",", omittingEmptySubsequences: false)
    {
      let item = Substring(element).trimmingOWS()
      if item.isEmpty { continue }  // `#rule` allows empty list elements
      guard specs.count < maxSpecs, let spec = parseSpec(item) else { return nil }
      specs.append(spec)
    }
    return specs.isEmpty ? nil : specs
  }

  /// Resolves a `Range` header value (nil when absent) against `length` bytes.
  static func resolve(_ value: String?, length: Int) -> Resolution {
    guard let value, let specs = parse(value) else { return .full }
    let satisfiable = specs.compactMap { range(of: $0, length: length) }
    if satisfiable.isEmpty { return .unsatisfiable }
    return satisfiable.count == 1 ? .partial(satisfiable[0]) : .full
  }

  /// The bytes a spec selects, or nil when it is unsatisfiable.
  static func range(of spec: Spec, length: Int) -> ClosedRange<Int>? {
    switch spec {
    case .fromTo(let first, let last):
      guard first < length else { return nil }
      return first...min(last ?? Int.max, length - 1)
    case .suffix(let count):
      guard count > 0, length > 0 else { return nil }
      return max(0, length - count)...(length - 1)
    }
  }

  private static func parseSpec(_ item: Substring) -> Spec? {
    guard let dash = item.firstIndex(of: "-") else { return nil }
    let firstText = item[..<dash]
    let lastText = item[item.index(after: dash)...]
    if firstText.isEmpty {
      guard let count = digits(lastText) else { return nil }
      return .suffix(length: count)
    }
    guard let first = digits(firstText) else { return nil }
    if lastText.isEmpty { return .fromTo(first: first, last: nil) }
    guard let last = digits(lastText), last >= first else { return nil }
    return .fromTo(first: first, last: last)
  }

  /// A non-empty run of ASCII digits as a number, saturating at `Int.max`.
  private static func digits(_ text: Substring) -> Int? {
    guard !text.isEmpty else { return nil }
    var value = 0
    for byte in text.utf8 {
      guard byte >= 0x30 && byte <= 0x39 else { return nil }
      let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = shifted.addingReportingOverflow(Int(byte - 0x30))
      value = overflow1 || overflow2 ? Int.max : sum
    }
    return value
  }
}
