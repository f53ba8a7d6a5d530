/// Decodes a hex string, ignoring whitespace and `:` separators (as in RFC listings).
/// Traps on malformed input: a typo in a test vector must fail loudly.
func hex(_ string: String) -> [UInt8] {
  let digits = string.filter { !$0.isWhitespace && $0 != ":" }
  precondition(digits.count % 2 == 0, "odd number of hex digits")
  var bytes: [UInt8] = []
  bytes.reserveCapacity(digits.count / 2)
  var index = digits.startIndex
  while index < digits.endIndex {
    let next = digits.index(index, offsetBy: 2)
    guard let byte = UInt8(digits[index..<next], radix: 16) else {
      preconditionFailure("invalid hex digits \(digits[index..<next])")
    }
    bytes.append(byte)
    index = next
  }
  return bytes
}

/// The UTF-8 bytes of `string`.
func utf8(_ string: String) -> [UInt8] { Array(string.utf8) }

/// `count` copies of `byte`.
func repeated(_ byte: UInt8, _ count: Int) -> [UInt8] { [UInt8](repeating: byte, count: count) }

/// Bytes `first`, `first + 1`, … (`count` of them).
func sequence(from first: UInt8, count: Int) -> [UInt8] {
  (0..<count).map { first &+ UInt8(truncatingIfNeeded: $0) }
}
