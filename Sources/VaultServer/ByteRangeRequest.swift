/// A `Range` header resolved against a representation's length (RFC 9110 §14.1.2, §14.2).
///
/// - A header that does not parse (wrong unit, bad number, `last < first`) is ignored: the
///   full representation is sent with 200, as the RFC requires.
/// - A multi-range request is answered with the **first satisfiable range** as a single
///   206 part; the server never sends `multipart/byteranges` (players never ask for it).
/// - When no range is satisfiable, the answer is 416 with `Content-Range: bytes */LENGTH`.
enum ByteRangeRequest: Equatable, Sendable {
  /// No usable Range header: send everything with 200.
  case full
  /// Send bytes `start...end` (inclusive) with 206.
  case partial(start: UInt64, end: UInt64)
  /// 416.
  case unsatisfiable

  /// Resolves `header` (nil when absent) for a representation of `length` bytes.
  init(header: String?, length: UInt64) {
    guard let header, let specs = Self.parse(header) else {
      self = .full
      return
    }
    for spec in specs {
      switch spec {
      case .from(let first, let last):
        if first < length {
          self = .partial(start: first, end: min(last ?? (length - 1), length - 1))
          return
        }
      case .suffix(let count):
        if count > 0 && length > 0 {
          self = .partial(start: length - min(count, length), end: length - 1)
          return
        }
      }
    }
    self = .unsatisfiable
  }

  enum Spec: Equatable {
    case from(UInt64, UInt64?)
    case suffix(UInt64)
  }

  /// The syntax of `bytes=range-set`; nil when any part is malformed.
  static func parse(_ header: String) -> [Spec]? {
    guard let equals = header.firstIndex(of: "=") else { return nil }
    let unit = String(header[..<equals]).trimmingCharactersInSpaces()
    guard unit.lowercased() == "bytes" else { return nil }
    var specs: [Spec] = []
    for element in header[header.index(after: equals)...].split(
      separator: ",", omittingEmptySubsequences: false)
    {
      let item = String(element).trimmingCharactersInSpaces()
      // RFC 9110 §5.6.1: empty list elements are allowed and ignored.
      if item.isEmpty { continue }
      guard let dash = item.firstIndex(of: "-") else { return nil }
      let first = item[..<dash]
      let last = item[item.index(after: dash)...]
      if first.isEmpty {
        guard let count = number(last) else { return nil }
        specs.append(.suffix(count))
      } else {
        guard let start = number(first) else { return nil }
        if last.isEmpty {
          specs.append(.from(start, nil))
        } else {
          guard let end = number(last), end >= start else { return nil }
          specs.append(.from(start, end))
        }
      }
    }
    return specs.isEmpty ? nil : specs
  }

  private static func number(_ text: Substring) -> UInt64? {
    guard !text.isEmpty, text.allSatisfy(\.isASCIIDigit) else { return nil }
    // Too many digits to fit: treat as huge rather than malformed (it is valid syntax).
    return UInt64(text) ?? (text.count > 19 ? UInt64.max : nil)
  }
}
