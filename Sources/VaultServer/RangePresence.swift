import VaultCore

extension PresenceMap {
  /// The first chunk of bytes `start...end` that is not stored, if any.
  func firstMissing(start: UInt64, end: UInt64, chunkSize: Int) -> Int? {
    let size = UInt64(chunkSize)
    return (Int(start / size)...Int(end / size)).first { !contains($0) }
  }
}
