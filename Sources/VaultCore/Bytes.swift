/// Little-endian encoding and hex helpers shared by the format code.
enum Bytes {
  static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  static func read<T: FixedWidthInteger>(_: T.Type, from bytes: [UInt8], at offset: Int) -> T {
    var value: T = 0
    for i in 0..<MemoryLayout<T>.size {
      value |= T(truncatingIfNeeded: bytes[offset + i]) << (8 * i)
    }
    return value
  }

  static func hex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for b in bytes {
      out.append(digits[Int(b >> 4)])
      out.append(digits[Int(b & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  static func fromHex(_ string: String) -> [UInt8]? {
    let utf8 = Array(string.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    out.reserveCapacity(utf8.count / 2)
    var i = 0
    while i < utf8.count {
      guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
      out.append(hi << 4 | lo)
      i += 2
    }
    return out
  }

  static func isHex(_ string: String) -> Bool {
    string.utf8.allSatisfy { nibble($0) != nil }
  }

  private static func nibble(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
  }
}
