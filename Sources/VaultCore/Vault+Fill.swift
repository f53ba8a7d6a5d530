import Foundation
import VaultCrypto

extension Vault {
  /// Opens an asset for progressive filling: the cache entry of `identity` at the origin
  /// version described by `length` and `validator`.
  ///
  /// If the stored generation has the same length and validator, its chunks are kept and
  /// the writer continues it. Otherwise a new generation starts: a new data key, a new file
  /// (header written and synced first), the record replaced in one transaction, then the old
  /// file removed. Readers therefore see one origin version, never a mix.
  /// - Parameters:
  ///   - identity: what the asset is (a URL's canonical identity or a content id).
  ///   - length: the origin's total length.
  ///   - validator: the origin's ETag or Last-Modified, if any.
  ///   - metadata: name, content type and origin URL to keep (sealed).
  /// - Returns: a writer holding the asset's writer lock.
  /// - Throws: ``VaultError/assetBusy(_:)`` if another process is filling it or recorded
  ///   it since this call looked (look again: its record is there now), I/O errors.
  public func beginFill(
    identity: AssetIdentity, length: UInt64, validator: String?, metadata: AssetMetadata
  ) throws -> AssetWriter {
    let id = try assetID(for: identity)
    var stored = AssetMetadata(
      name: metadata.name, contentType: metadata.contentType, originURL: metadata.originURL,
      validator: validator)
    // One read decides between continuing and replacing; `replaceGeneration` re-checks it.
    let existing = try index.asset(id)
    if let record = existing, UInt64(record.length) == length,
      let keys = try? unwrapKeys(record),
      let current = try? AssetMetadata.open(
        Array(record.meta), keys: keys, assetID: id, generation: UInt64(record.generation)),
      current.validator == validator
    {
      return try continueFill(record: record, keys: keys)
    }
    // A lease survives a new origin version: keep the metadata flag that protects its row.
    if let existing, let keys = try? unwrapKeys(existing),
      let old = try? AssetMetadata.open(
        Array(existing.meta), keys: keys, assetID: id, generation: UInt64(existing.generation))
    {
      stored.leased = old.leased
    }
    let generation = UInt64(existing?.generation ?? 0) + 1
    let keys = try AssetKeys.generate()
    let header = try AssetHeader(
      chunkSize: chunkSize, assetID: id, generation: generation, totalLength: length,
      validator: validator, headerKey: keys.headerKey)
    let path = assetPath(id, generation: generation)
    try FileSystem.makeDirectory(FileSystem.parent(of: path))
    let file: AssetFile
    do {
      file = try AssetFile.createForWriting(path, asset: id.short) {
        try index.asset(id).map { UInt64($0.generation) == generation } ?? false
      }
    } catch VaultError.duplicateAsset {
      // Another process recorded this very generation since our read: use theirs.
      throw VaultError.assetBusy(id.short)
    }
    var recorded = false
    defer { if !recorded { FileSystem.remove(path) } }
    try header.encoded().withUnsafeBytes { try file.write($0, at: 0) }
    try file.sync()
    FileSystem.syncDirectory(FileSystem.parent(of: path))
    let layout = ChunkLayout(chunkSize: chunkSize, length: length)
    if stored.name.isEmpty { stored.name = identity.canonical }
    let now = Date().timeIntervalSince1970
    let record = AssetRecord(
      id: Data(id.bytes), generation: Int64(generation), chunkSize: chunkSize,
      length: Int64(length), presence: Data(PresenceMap(chunkCount: layout.chunkCount).bits),
      chunksStored: 0, keyID: masterKey.keyID,
      wrappedKey: Data(try wrap(keys, assetID: id, generation: generation)),
      meta: Data(try stored.sealed(keys: keys, assetID: id, generation: generation)),
      sealCount: 0, pinned: false, createdAt: now, lastAccess: now)
    let replaced = try index.replaceGeneration(record, expected: existing?.generation)
    recorded = true
    if let replaced {
      let oldPath = assetPath(id, generation: UInt64(replaced.generation))
      if oldPath != path { FileSystem.remove(oldPath) }
    }
    return try AssetWriter(
      vault: self, assetID: id, generation: generation, layout: layout, keys: keys,
      headerMAC: header.mac, file: file)
  }

  /// Opens a writer for an asset's existing generation, to store more of its chunks.
  /// - Throws: ``VaultError/unknownAsset(_:)`` if the asset is gone, or
  ///   ``VaultError/assetDamaged(asset:reason:)`` if it is at another generation now;
  ///   ``VaultError/assetBusy(_:)`` if another process is writing it.
  public func resumeFill(_ id: AssetID, generation: UInt64) throws -> AssetWriter {
    let (record, keys) = try loadAsset(id)
    guard UInt64(record.generation) == generation else {
      throw VaultError.assetDamaged(asset: id.short, reason: "its generation was replaced")
    }
    return try continueFill(record: record, keys: keys)
  }

  private func continueFill(record: AssetRecord, keys: AssetKeys) throws -> AssetWriter {
    let id = record.assetID
    let generation = UInt64(record.generation)
    let file = try AssetFile.openForWriting(assetPath(id, generation: generation), asset: id.short)
    var headerBytes = [UInt8](repeating: 0, count: VaultFormat.headerLength)
    let n = try headerBytes.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
    let header = try AssetHeader.decode(
      Array(headerBytes[0..<n]), headerKey: keys.headerKey, asset: id.short)
    guard header.assetID == id, header.generation == generation,
      header.chunkSize == record.chunkSize, header.totalLength == UInt64(record.length)
    else {
      throw VaultError.assetDamaged(asset: id.short, reason: "its header does not match the index")
    }
    return try AssetWriter(
      vault: self, assetID: id, generation: generation, layout: record.layout, keys: keys,
      headerMAC: header.mac, file: file)
  }
}
