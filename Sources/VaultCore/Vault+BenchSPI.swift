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

@_spi(Bench) extension Vault {
  /// The key-destruction half of ``Vault/shred(_:)``: the row transaction (wrapped key,
  /// copies, lease) and the WAL checkpoint. Returns the asset file's path, still to unlink.
  public func benchDestroyKey(_ id: AssetID) throws -> String {
    guard let record = try index.deleteAsset(id) else { throw VaultError.unknownAsset(id.short) }
    return assetPath(id, generation: UInt64(record.generation))
  }
}

@_spi(Bench) extension Vault {
  /// Forgets the lease states this process reuses, so the next check reads the index.
  public func benchForgetRecentLeases() {
    recentLeases.withLock { $0.removeAll() }
  }
}
