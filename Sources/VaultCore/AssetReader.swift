import Foundation
import VaultCrypto

/// Random-access reads of one asset. A read of n bytes at offset o authenticates and
/// decrypts only the chunks that [o, o+n) touches (plus none: the last opened chunk is kept,
/// so small sequential reads inside one chunk open it once). Memory is one batch of chunks
/// whatever the asset size.
///
/// Not thread-safe: use one reader per thread or task.
public final class AssetReader {
  /// The asset's id.
  public let assetID: AssetID
  /// Plaintext length.
  public let length: UInt64
  /// The asset's sealed metadata, opened.
  public let metadata: AssetMetadata
  /// Chunks this reader authenticated and decrypted.
  public private(set) var chunksOpened = 0

  let layout: ChunkLayout
  /// The stored chunks as of the last ``refreshPresence()`` (or creation).
  public private(set) var presence: PresenceMap
  /// The generation this reader reads.
  public let generation: UInt64
  private let vault: Vault
  private let file: AssetFile
  private let crypter: ChunkCrypter
  private var buffers: ChunkBuffers?
  private let slotBuffer: UnsafeMutableRawBufferPointer
  private let chunkBuffer: UnsafeMutableRawBufferPointer
  private var cachedChunk: Int?
  /// Slots of a run of whole chunks (grown on demand, at most `batchChunks` slots).
  private var span = UnsafeMutableRawBufferPointer.allocate(byteCount: 0, alignment: 64)
  private var spanCapacity = 0

  init(vault: Vault, id: AssetID) throws {
    let (record, keys) = try vault.loadAsset(id)
    let name = id.short
    assetID = id
    length = UInt64(record.length)
    layout = record.layout
    guard let presence = record.presenceMap else {
      throw VaultError.assetDamaged(asset: name, reason: "its presence map does not fit its length")
    }
    self.presence = presence
    generation = UInt64(record.generation)
    metadata = try AssetMetadata.open(
      Array(record.meta), keys: keys, assetID: id, generation: UInt64(record.generation))
    self.vault = vault
    let file = try AssetFile.openForReading(
      vault.assetPath(id, generation: UInt64(record.generation)))
    self.file = file
    var headerBytes = [UInt8](repeating: 0, count: VaultFormat.headerLength)
    let n = try headerBytes.withUnsafeMutableBytes { try file.read(into: $0, at: 0) }
    let header = try AssetHeader.decode(
      Array(headerBytes[0..<n]), headerKey: keys.headerKey, asset: name)
    guard header.assetID == id, header.generation == UInt64(record.generation),
      header.chunkSize == record.chunkSize,
      header.totalLength == nil || header.totalLength == UInt64(record.length)
    else {
      throw VaultError.assetDamaged(asset: name, reason: "its header does not match the index")
    }
    crypter = try ChunkCrypter(
      key: keys.chunkKey, chunkSize: record.chunkSize, headerMAC: header.mac,
      workers: vault.workers)
    slotBuffer = .allocate(byteCount: layout.slotSize, alignment: 64)
    chunkBuffer = .allocate(byteCount: layout.chunkSize, alignment: 64)
  }

  deinit {
    SecureMemory.cleanse(chunkBuffer)
    chunkBuffer.deallocate()
    slotBuffer.deallocate()
    span.deallocate()
  }

  /// Re-reads which chunks are stored (a writer may have added some since).
  /// - Returns: false if the asset moved to another generation (this reader is then stale).
  public func refreshPresence() throws -> Bool {
    guard let record = try vault.index.asset(assetID), UInt64(record.generation) == generation,
      let map = record.presenceMap
    else { return false }
    presence = map
    return true
  }

  /// Reads `count` bytes at `offset`.
  /// - Throws: ``VaultError/rangeNotSatisfiable(offset:length:assetLength:)``,
  ///   ``VaultError/chunkMissing(asset:index:)``, ``VaultError/chunkDamaged(asset:index:reason:)``.
  public func read(offset: UInt64, count: Int) throws -> [UInt8] {
    var out = [UInt8](repeating: 0, count: count)
    try out.withUnsafeMutableBytes { try read(offset: offset, into: $0) }
    return out
  }

  /// Fills `buffer` with the bytes at `offset`. Runs of chunks the read covers whole are
  /// read with one `pread` and opened on all cores straight into `buffer`; a partial
  /// chunk at either end goes through the one-chunk cache.
  public func read(offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {
    try checkRange(offset: offset, count: UInt64(buffer.count))
    var position = offset
    var written = 0
    let end = offset + UInt64(buffer.count)
    var chunks = layout.chunks(coveringOffset: offset, count: UInt64(buffer.count))
    while let index = chunks.first {
      let chunkStart = UInt64(index) * UInt64(layout.chunkSize)
      // Consecutive chunks wholly inside the read, starting here (at most one batch).
      var wholeEnd = index
      while position == chunkStart, wholeEnd < chunks.upperBound,
        wholeEnd - index < Self.batchChunks,
        UInt64(wholeEnd) * UInt64(layout.chunkSize) + UInt64(layout.plaintextLength(wholeEnd))
          <= end
      {
        wholeEnd += 1
      }
      if wholeEnd - index >= 2 {
        let run = index..<wholeEnd
        let bytes = (run.count - 1) * layout.chunkSize + layout.plaintextLength(run.upperBound - 1)
        try openWhole(
          run, into: UnsafeMutableRawBufferPointer(rebasing: buffer[written..<(written + bytes)]))
        written += bytes
        position += UInt64(bytes)
        chunks = run.upperBound..<chunks.upperBound
        continue
      }
      chunks = (index + 1)..<chunks.upperBound
      try openChunk(index)
      let from = Int(position - chunkStart)
      let take = min(layout.plaintextLength(index) - from, buffer.count - written)
      UnsafeMutableRawBufferPointer(rebasing: buffer[written..<(written + take)])
        .copyMemory(from: UnsafeRawBufferPointer(rebasing: chunkBuffer[from..<(from + take)]))
      written += take
      position += UInt64(take)
    }
  }

  func checkRange(offset: UInt64, count: UInt64) throws {
    guard offset <= length, count <= length - offset else {
      throw VaultError.rangeNotSatisfiable(offset: offset, length: count, assetLength: length)
    }
  }

  /// Largest run opened in one batch by `read(offset:into:)`: bounds its slot buffer.
  static let batchChunks = 64

  /// Opens whole chunks `run` into `out` (exactly their plaintext length), with this
  /// reader's span buffer for their slots.
  private func openWhole(_ run: Range<Int>, into out: UnsafeMutableRawBufferPointer) throws {
    let spanLength = slotSpanLength(run)
    if spanLength > spanCapacity {
      span.deallocate()
      span = .allocate(byteCount: spanLength, alignment: 64)
      spanCapacity = spanLength
    }
    try openRun(run, slots: span, into: out)
  }

  /// Bytes the slots of consecutive chunks `run` take in the file.
  private func slotSpanLength(_ run: Range<Int>) -> Int {
    Int(layout.slotOffset(run.upperBound - 1) - layout.slotOffset(run.lowerBound))
      + layout.plaintextLength(run.upperBound - 1) + VaultFormat.slotOverhead
  }

  /// Reads the slots of consecutive chunks `run` with one `pread` into `slots`, then opens
  /// them on the crypto workers into `plaintext` (chunk k of the run at k × chunkSize).
  private func openRun(
    _ run: Range<Int>, slots buffer: UnsafeMutableRawBufferPointer,
    into plaintext: UnsafeMutableRawBufferPointer
  ) throws {
    if let missing = run.first(where: { !presence.contains($0) }) {
      throw VaultError.chunkMissing(asset: assetID.short, index: missing)
    }
    let spanLength = slotSpanLength(run)
    let slots = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<spanLength])
    let n = try file.read(into: slots, at: layout.slotOffset(run.lowerBound))
    if n < spanLength {
      vault.count(refused: 1)
      throw VaultError.chunkDamaged(
        asset: assetID.short, index: run.lowerBound + n / layout.slotSize,
        reason: "file is truncated")
    }
    let failures = crypter.open(
      slots: UnsafeRawBufferPointer(slots), plaintext: plaintext, firstIndex: run.lowerBound,
      count: run.count, length: { self.layout.plaintextLength(run.lowerBound + $0) },
      isFinal: { self.layout.isFinal(run.lowerBound + $0) })
    if let failure = failures.first {
      vault.count(refused: failures.count)
      throw VaultError.chunkDamaged(
        asset: assetID.short, index: failure.index, reason: failure.reason)
    }
    chunksOpened += run.count
    vault.count(opened: run.count)
  }

  /// Opens one chunk into the one-chunk cache (kept: small reads inside it open it once).
  private func openChunk(_ index: Int) throws {
    if cachedChunk == index { return }
    cachedChunk = nil
    try openRun(index..<(index + 1), slots: slotBuffer, into: chunkBuffer)
    cachedChunk = index
  }

  /// Streams the plaintext of [offset, offset+count) in order, a batch of chunks at a time
  /// opened on all cores; `body` gets each piece. Used by export.
  func forEachPiece(
    offset: UInt64, count: UInt64, _ body: (UnsafeRawBufferPointer) throws -> Void
  ) throws {
    try checkRange(offset: offset, count: count)
    let chunks = layout.chunks(coveringOffset: offset, count: count)
    if chunks.isEmpty { return }
    let buffers =
      self.buffers ?? ChunkBuffers(chunkSize: layout.chunkSize, workers: crypter.workers)
    self.buffers = buffers
    var first = chunks.lowerBound
    let end = offset + count
    while first < chunks.upperBound {
      let batch = first..<min(first + buffers.chunksPerBatch, chunks.upperBound)
      try openRun(batch, slots: buffers.slots, into: buffers.plaintext)
      let batchStart = UInt64(batch.lowerBound) * UInt64(layout.chunkSize)
      let batchEnd =
        batchStart
        + UInt64(
          (batch.count - 1) * layout.chunkSize + layout.plaintextLength(batch.upperBound - 1))
      let from = Int(max(offset, batchStart) - batchStart)
      let to = Int(min(end, batchEnd) - batchStart)
      try body(UnsafeRawBufferPointer(rebasing: buffers.plaintext[from..<to]))
      first = batch.upperBound
    }
  }
}

extension Vault {
  /// A random-access reader of a stored asset.
  /// - Parameter id: the asset.
  /// - Throws: ``VaultError/unknownAsset(_:)``, ``VaultError/assetDamaged(asset:reason:)``.
  public func reader(for id: AssetID) throws -> AssetReader {
    let reader = try AssetReader(vault: self, id: id)
    noteAccess(id)
    return reader
  }
}
