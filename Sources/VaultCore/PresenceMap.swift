/// Which chunks of an asset are stored: bit i (byte i/8, bit i%8, LSB first) is set when
/// chunk i's slot was written and synced. A clear bit is a hole, never read as zeros.
public struct PresenceMap: Sendable, Equatable {
  /// The packed bits, as stored in the index.
  public private(set) var bits: [UInt8]
  /// Number of chunks the map covers.
  public let chunkCount: Int

  /// An empty map for `chunkCount` chunks.
  public init(chunkCount: Int) {
    self.chunkCount = chunkCount
    bits = [UInt8](repeating: 0, count: (chunkCount + 7) / 8)
  }

  /// A map with every chunk present.
  public static func full(chunkCount: Int) -> PresenceMap {
    var map = PresenceMap(chunkCount: chunkCount)
    for i in 0..<chunkCount { map.insert(i) }
    return map
  }

  /// Restores a map from the index; returns nil if the blob does not fit the chunk count.
  public init?(bits: [UInt8], chunkCount: Int) {
    guard bits.count == (chunkCount + 7) / 8 else { return nil }
    self.bits = bits
    self.chunkCount = chunkCount
  }

  /// Whether chunk `index` is stored.
  public func contains(_ index: Int) -> Bool {
    guard index >= 0, index < chunkCount else { return false }
    return bits[index >> 3] & (1 << UInt8(index & 7)) != 0
  }

  /// Marks chunk `index` stored.
  public mutating func insert(_ index: Int) {
    precondition(index >= 0 && index < chunkCount, "chunk index out of range")
    bits[index >> 3] |= 1 << UInt8(index & 7)
  }

  /// Marks chunk `index` missing.
  public mutating func remove(_ index: Int) {
    guard index >= 0, index < chunkCount else { return }
    bits[index >> 3] &= ~(1 << UInt8(index & 7))
  }

  /// Number of stored chunks.
  public var count: Int { bits.reduce(0) { $0 + $1.nonzeroBitCount } }

  /// Whether every chunk is stored.
  public var isComplete: Bool { count == chunkCount }

  /// The stored chunk indices in ascending order.
  public var indices: [Int] { (0..<chunkCount).filter { contains($0) } }
}

extension PresenceMap {
  /// Maximal runs of stored chunks within `range`, in order.
  public func storedRuns(in range: Range<Int>) -> [Range<Int>] {
    var runs: [Range<Int>] = []
    var start: Int?
    for i in range {
      if contains(i) {
        if start == nil { start = i }
      } else if let s = start {
        runs.append(s..<i)
        start = nil
      }
    }
    if let s = start { runs.append(s..<range.upperBound) }
    return runs
  }
}
