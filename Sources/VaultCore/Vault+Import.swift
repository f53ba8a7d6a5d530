import Foundation
import VaultCrypto

extension Vault {
  /// Imports a local file as a new, complete asset, sealing it chunk by chunk in constant
  /// memory on all cores. Nothing is recorded until every chunk is written and synced, so an
  /// interrupted import leaves no asset (and its leftover file is removed on the next write).
  /// - Parameters:
  ///   - path: the file to import.
  ///   - name: the asset's name (content id); its id is the keyed HMAC of it.
  ///   - contentType: MIME type to keep (sealed), if known.
  ///   - lease: a lease recorded in the same transaction as the asset, if any.
  ///   - progress: called after each batch.
  /// - Returns: the stored asset.
  /// - Throws: ``VaultError/duplicateAsset(_:)``, ``VaultError/inputChanged(path:)``, I/O errors.
  @discardableResult
  public func importFile(
    at path: String, name: String, contentType: String? = nil, lease: Lease? = nil,
    progress: ((OperationProgress) -> Void)? = nil
  ) throws -> AssetInfo {
    let fd = posixOpen(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw VaultError.io(operation: "open", path: path, errno: errno) }
    defer { _ = close(fd) }
    return try importStream(
      fileDescriptor: fd, sourceName: path, name: name, contentType: contentType, lease: lease,
      progress: progress)
  }

  /// Imports everything readable from a file descriptor (a file, a pipe, stdin). For a
  /// regular file the length goes into the header; for a pipe it is found at end of input.
  /// - Parameters:
  ///   - fileDescriptor: an open descriptor, read to its end; not closed.
  ///   - sourceName: how to name the input in errors.
  ///   - name: the asset's name (content id).
  ///   - contentType: MIME type to keep (sealed), if known.
  ///   - lease: a lease recorded in the same transaction as the asset, if any.
  ///   - progress: called after each batch.
  /// - Returns: the stored asset.
  @discardableResult
  public func importStream(
    fileDescriptor: Int32, sourceName: String, name: String, contentType: String? = nil,
    lease: Lease? = nil, progress: ((OperationProgress) -> Void)? = nil
  ) throws -> AssetInfo {
    guard !name.isEmpty else { throw VaultError.invalidArgument("the asset name is empty") }
    try lease?.validate()
    let id = try assetID(for: .contentID(name))
    if try index.asset(id) != nil { throw VaultError.duplicateAsset(name) }
    var info = stat()
    guard fstat(fileDescriptor, &info) == 0 else {
      throw VaultError.io(operation: "stat", path: sourceName, errno: errno)
    }
    let isRegular = (info.st_mode & S_IFMT) == S_IFREG
    if (info.st_mode & S_IFMT) == S_IFDIR {
      throw VaultError.io(operation: "read", path: sourceName, errno: EISDIR)
    }
    let expectedLength: UInt64? = isRegular ? UInt64(info.st_size) : nil

    let generation: UInt64 = 1
    let keys = try AssetKeys.generate()
    let header = try AssetHeader(
      chunkSize: chunkSize, assetID: id, generation: generation, totalLength: expectedLength,
      validator: nil, headerKey: keys.headerKey)
    let path = assetPath(id, generation: generation)
    try FileSystem.makeDirectory(FileSystem.parent(of: path))
    let file = try AssetFile.createForWriting(path, asset: name) {
      try index.asset(id) != nil
    }
    var committed = false
    // Ctrl-C in the CLI removes the unrecorded file too.
    PartialFiles.register(path)
    defer {
      PartialFiles.unregister(path)
      if !committed { FileSystem.remove(path) }
    }

    let encodedHeader = header.encoded()
    try encodedHeader.withUnsafeBytes { try file.write($0, at: 0) }
    let crypter = try ChunkCrypter(
      key: keys.chunkKey, chunkSize: chunkSize, headerMAC: header.mac, workers: workers)
    let buffers = ChunkBuffers(chunkSize: chunkSize, workers: workers)
    let input = InputReader(fileDescriptor: fileDescriptor, sourceName: sourceName)
    let layoutForSlots = ChunkLayout(chunkSize: chunkSize, length: 0)
    var nextIndex = 0
    var total: UInt64 = 0
    let batchBytes = buffers.chunksPerBatch * chunkSize
    while true {
      let (filled, atEnd) = try input.fill(buffers.plaintext, upTo: batchBytes)
      if filled > 0 {
        let chunks = (filled + chunkSize - 1) / chunkSize
        guard Int64(nextIndex + chunks) <= VaultFormat.sealLimit else {
          throw VaultError.sealLimitReached(asset: name)
        }
        let lastLength = filled - (chunks - 1) * chunkSize
        try crypter.seal(
          plaintext: UnsafeRawBufferPointer(buffers.plaintext), slots: buffers.slots,
          firstIndex: nextIndex, count: chunks, lastLength: lastLength, lastIsFinal: atEnd)
        let sealedBytes = (chunks - 1) * crypter.slotSize + lastLength + VaultFormat.slotOverhead
        let slotOffset = layoutForSlots.slotOffset(nextIndex)
        try file.write(
          UnsafeRawBufferPointer(rebasing: buffers.slots[0..<sealedBytes]), at: slotOffset)
        // Let the disk work while the next batch is sealed; the fsync below stays the promise.
        file.startWriteback(at: slotOffset, length: sealedBytes)
        count(sealed: chunks)
        nextIndex += chunks
        total += UInt64(filled)
        progress?(OperationProgress(bytesDone: total, bytesTotal: expectedLength))
      }
      if atEnd { break }
    }
    if let expectedLength, expectedLength != total {
      throw VaultError.inputChanged(path: sourceName)
    }
    // Chunks reach the disk before the index claims them.
    try file.sync()
    FileSystem.syncDirectory(FileSystem.parent(of: path))

    let layout = ChunkLayout(chunkSize: chunkSize, length: total)
    let metadata = AssetMetadata(
      name: name, contentType: contentType, leased: lease == nil ? nil : true)
    let now = Date().timeIntervalSince1970
    let record = AssetRecord(
      id: Data(id.bytes), generation: Int64(generation), chunkSize: chunkSize,
      length: Int64(total), presence: Data(PresenceMap.full(chunkCount: layout.chunkCount).bits),
      chunksStored: layout.chunkCount, keyID: masterKey.keyID,
      wrappedKey: Data(try wrap(keys, assetID: id, generation: generation)),
      meta: Data(try metadata.sealed(keys: keys, assetID: id, generation: generation)),
      sealCount: Int64(layout.chunkCount), pinned: false, createdAt: now, lastAccess: now)
    let leaseRow = try lease.map { lease in
      let seen = clock.now()
      return try LeaseRecord(
        assetID: id, assetCreatedAt: now,
        state: LeaseState(lease: lease, firstPlayAt: nil, plays: 0, lastPlayAt: nil, seenAt: seen),
        key: leaseKey)
    }
    try index.insertAsset(record, name: name, lease: leaseRow)
    committed = true
    // A write that crosses the vault's limits evicts at once (never the new asset).
    _ = try? enforceLimits(protecting: [id])
    return try assetInfo(
      record: record, metadata: metadata,
      lease: leaseRow.map { LeaseSummary(state: $0.state, at: clock.now()) })
  }

  /// Builds the public description of a record.
  func assetInfo(record: AssetRecord, metadata: AssetMetadata, lease: LeaseSummary? = nil)
    throws -> AssetInfo
  {
    let layout = record.layout
    let presence = record.presenceMap ?? PresenceMap(chunkCount: layout.chunkCount)
    var stored = Int64(VaultFormat.headerLength)
    for i in presence.indices { stored += layout.sealedBytes(ofChunk: i) }
    return AssetInfo(
      id: record.assetID.hex, name: metadata.name, size: UInt64(record.length),
      storedBytes: stored, chunkSize: record.chunkSize, chunksStored: record.chunksStored,
      chunksTotal: layout.chunkCount, contentType: metadata.contentType, pinned: record.pinned,
      lastAccess: Date(timeIntervalSince1970: record.lastAccess),
      createdAt: Date(timeIntervalSince1970: record.createdAt),
      generation: UInt64(record.generation), keyID: record.keyID,
      complete: record.chunksStored == layout.chunkCount, originURL: metadata.originURL,
      validator: metadata.validator, lease: lease)
  }
}

/// Reads an input descriptor in batches and tells, without seeking, whether the batch just
/// read is the last one: a full batch is followed by a one-byte look-ahead.
private final class InputReader {
  let fileDescriptor: Int32
  let sourceName: String
  private var carried: UInt8?
  private var ended = false

  init(fileDescriptor: Int32, sourceName: String) {
    self.fileDescriptor = fileDescriptor
    self.sourceName = sourceName
  }

  /// Fills up to `limit` bytes; returns the count and whether the input ended.
  func fill(_ buffer: UnsafeMutableRawBufferPointer, upTo limit: Int) throws -> (Int, Bool) {
    guard let base = buffer.baseAddress else { return (0, true) }
    var count = 0
    if let byte = carried {
      base.storeBytes(of: byte, as: UInt8.self)
      count = 1
      carried = nil
    }
    while count < limit && !ended {
      let n = read(fileDescriptor, base + count, limit - count)
      if n < 0 {
        if errno == EINTR { continue }
        throw VaultError.io(operation: "read", path: sourceName, errno: errno)
      }
      if n == 0 { ended = true } else { count += n }
    }
    if !ended {
      var byte: UInt8 = 0
      while true {
        let n = read(fileDescriptor, &byte, 1)
        if n < 0 && errno == EINTR { continue }
        if n < 0 { throw VaultError.io(operation: "read", path: sourceName, errno: errno) }
        if n == 0 { ended = true } else { carried = byte }
        break
      }
    }
    return (count, ended)
  }
}
