import Foundation

/// Index operations `vault bench` times on their own. Not API: `@_spi(Bench)`.
@_spi(Bench) extension Vault {
  /// One presence-bit commit (what each loader store run costs the index).
  public func benchRecordChunk(_ id: AssetID, generation: UInt64, index chunk: Int) throws {
    try index.recordChunks(id, generation: generation, indices: chunk..<(chunk + 1))
  }

  /// One uncoalesced last-access write (what `noteAccess` costs when it writes).
  public func benchTouch(_ id: AssetID) throws {
    try index.touch([id], at: Date().timeIntervalSince1970)
  }
}
