import Foundation
import VaultCore

/// The bytes of one read, in order, as pieces: one stored chunk, or the chunks that arrived
/// from the origin together (up to 1 MiB). Pull-based: the next piece is fetched (or opened
/// from the vault) only when asked for.
public struct LoaderRead: AsyncSequence, Sendable {
  public typealias Element = [UInt8]

  let loader: RangeLoader
  let url: URL
  let contentID: String?
  let start: UInt64
  let end: UInt64?
  /// Whether the read is playback for the asset's lease (a prefetch is not).
  var countsAsPlay = true

  public func makeAsyncIterator() -> Iterator {
    let session = ReadSession(
      loader: loader, url: url, contentID: contentID, start: start, end: end)
    session.countsAsPlay = countsAsPlay
    return Iterator(session: session)
  }

  /// Iterates the pieces of a ``LoaderRead``.
  public struct Iterator: AsyncIteratorProtocol {
    let session: ReadSession

    public mutating func next() async throws -> [UInt8]? {
      try await session.next()
    }
  }
}

/// One reader's progress. Fields the actor reads (`id`, `assetID`, `generation`, `end`) are
/// set by the iterator before it calls the actor and not changed during the call; the
/// iterator is used by one task at a time (hence `@unchecked Sendable`).
final class ReadSession: @unchecked Sendable {
  private static let counter = LockedCounter()
  let id: Int
  let loader: RangeLoader
  let url: URL
  let contentID: String?
  let start: UInt64
  /// Whether this read counts as playback for the asset's lease (a prefetch does not).
  var countsAsPlay = true
  private let requestedEnd: UInt64?
  private(set) var end: UInt64 = 0
  private(set) var assetID: AssetID?
  private(set) var generation: UInt64 = 0
  private var chunkSize = 1
  private var length: UInt64 = 0
  private var position: UInt64
  private var prepared = false
  private var yielded = false
  private var restarts = 0
  private var repairs = 0
  /// Length and validator of the version this read started on.
  private var firstVersion: (length: UInt64, validator: String?)?
  private var done = false
  private var reader: AssetReader?
  /// Chunks already stored when the read started: what it got "from the cache".
  private var storedAtStart: PresenceMap?

  init(loader: RangeLoader, url: URL, contentID: String?, start: UInt64, end: UInt64?) {
    id = Self.counter.next()
    self.loader = loader
    self.url = url
    self.contentID = contentID
    self.start = start
    requestedEnd = end
    position = start
  }

  deinit {
    if !done, assetID != nil {
      let (loader, id, asset) = (loader, id, assetID)
      Task { await loader.abandon(session: id, entry: asset) }
    }
  }

  /// The last chunk this read wants.
  func lastChunk(_ chunkSize: Int) -> Int { Int(end / UInt64(chunkSize)) }

  func next() async throws -> [UInt8]? {
    guard !done else { return nil }
    if Task.isCancelled {
      await finish()
      throw CancellationError()
    }
    do {
      return try await step()
    } catch {
      await finish()
      if error is CancellationError { throw error }
      throw error
    }
  }

  private func step() async throws -> [UInt8]? {
    while true {
      if !prepared { try await prepare() }
      if length == 0 || position > end {
        await finish()
        return nil
      }
      let index = Int(position / UInt64(chunkSize))
      let arrived: ArraySlice<UInt8>?
      do {
        arrived = try await loader.chunk(try assetIDValue(), index, session: self)
      } catch is GenerationChanged {
        // The entry ended under the read: the origin changed, or another process replaced
        // or dropped the generation. Start over; `prepare` then refuses a different version
        // once bytes went out. Without a validator "the same version" cannot be told apart.
        restarts += 1
        if restarts > 3 || (yielded && firstVersion?.validator == nil) {
          throw LoaderError.originChanged(url: url.absoluteString)
        }
        prepared = false
        reader = nil
        continue
      }
      var piece: [UInt8]
      var chunks = 1
      do {
        piece = try arrived.map { slice(of: $0, chunk: index) } ?? readStored(index)
      } catch is AssetGone {
        // Evicted or removed under the read: start over on a new entry (same origin
        // version, or `originChanged` if bytes of another were delivered).
        await loader.forget(try assetIDValue(), generation: generation)
        restarts += 1
        if restarts > 3 { throw LoaderError.originChanged(url: url.absoluteString) }
        prepared = false
        reader = nil
        continue
      } catch let damaged as DamagedChunk {
        // Self-repair: drop the chunk and fetch it again (offline: a missing-range error).
        repairs += 1
        guard repairs <= 3 else { throw LoaderError.vault(damaged.description) }
        await loader.dropDamaged(
          try assetIDValue(), chunk: index, generation: generation, reason: damaged.reason)
        continue
      }
      if arrived != nil { chunks += try await appendArrived(to: &piece, after: index) }
      yielded = true
      position += UInt64(piece.count)
      await loader.noteDelivered(
        piece.count, chunks: chunks, fromCache: storedAtStart?.contains(index) ?? false)
      let reached = Int(position / UInt64(chunkSize))
      if position <= end, reached != index {
        await loader.passed(self, chunk: reached)
      }
      return piece
    }
  }

  private func prepare() async throws {
    let (asset, length, chunkSize, generation, stored, validator) = try await loader.prepare(
      self)
    if yielded, validator != firstVersion?.validator || length != firstVersion?.length {
      throw LoaderError.originChanged(url: url.absoluteString)
    }
    if firstVersion == nil { firstVersion = (length, validator) }
    storedAtStart = stored
    self.assetID = asset
    self.length = length
    self.chunkSize = chunkSize
    self.generation = generation
    if length == 0 {
      guard start == 0, requestedEnd == nil else {
        throw LoaderError.rangeNotSatisfiable(start: start, end: requestedEnd, length: 0)
      }
    } else {
      guard start < length, requestedEnd.map({ $0 >= start }) ?? true else {
        throw LoaderError.rangeNotSatisfiable(start: start, end: requestedEnd, length: length)
      }
      end = min(requestedEnd ?? (length - 1), length - 1)
    }
    prepared = true
  }

  private func assetIDValue() throws -> AssetID {
    guard let assetID else { throw LoaderError.vault("read used before it was prepared") }
    return assetID
  }

  /// Appends the chunks after `index` that have already arrived (in memory, not stored
  /// yet), up to ``maximumPiece`` bytes: a fast origin then costs one actor call and one
  /// downstream write per MiB instead of per chunk. Returns how many chunks it appended.
  private func appendArrived(to piece: inout [UInt8], after index: Int) async throws -> Int {
    let next = position + UInt64(piece.count)
    guard next <= end, next % UInt64(chunkSize) == 0 else { return 0 }
    let room = (Self.maximumPiece - piece.count) / chunkSize
    let last = min(lastChunk(chunkSize), index + room)
    guard last > index else { return 0 }
    let more = await loader.arrived(
      try assetIDValue(), generation: generation, after: index, through: last)
    guard !more.isEmpty else { return 0 }
    let wanted = more.reduce(0) { $0 + $1.count }
    piece.reserveCapacity(piece.count + min(wanted, Int(end - next + 1)))
    var at = next
    for chunk in more {
      let take = Int(min(UInt64(chunk.count), end - at + 1))
      piece.append(contentsOf: chunk.prefix(take))
      at += UInt64(take)
    }
    return more.count
  }

  /// Most bytes one piece gathers from chunks that arrived together.
  static let maximumPiece = 1 << 20

  /// The part of an arrived chunk this read wants.
  private func slice(of chunk: ArraySlice<UInt8>, chunk index: Int) -> [UInt8] {
    let chunkStart = UInt64(index) * UInt64(chunkSize)
    let from = chunk.startIndex + Int(position - chunkStart)
    let last = min(chunkStart + UInt64(chunk.count) - 1, end)
    return Array(chunk[from...(chunk.startIndex + Int(last - chunkStart))])
  }

  /// Opens the chunk from the vault and slices the part this read wants.
  private func readStored(_ index: Int) throws -> [UInt8] {
    do {
      if reader == nil || reader?.generation != generation {
        reader = try loader.vault.reader(for: try assetIDValue())
      }
      guard let reader else { throw LoaderError.vault("no reader") }
      // A different generation, or none: the asset was replaced or evicted under the read.
      guard reader.generation == generation else { throw AssetGone() }
      if !reader.presence.contains(index) {
        guard try reader.refreshPresence() else { throw AssetGone() }
      }
      let chunkEnd = min(UInt64(index + 1) * UInt64(chunkSize), length) - 1
      let last = min(chunkEnd, end)
      return try reader.read(offset: position, count: Int(last - position + 1))
    } catch VaultError.unknownAsset {
      throw AssetGone()
    } catch VaultError.chunkDamaged(let asset, let damagedIndex, let reason) {
      throw DamagedChunk(asset: asset, index: damagedIndex, reason: reason)
    } catch let error as VaultError {
      throw LoaderError.vault(error.description)
    }
  }

  private func finish() async {
    guard !done else { return }
    done = true
    await loader.abandon(session: id, entry: assetID)
  }
}

/// A process-wide counter for session ids.
final class LockedCounter: @unchecked Sendable {
  private let lock = NSLock()
  private var value = 0

  func next() -> Int {
    lock.withLock {
      value += 1
      return value
    }
  }
}

/// A stored chunk failed to open: the read drops it and fetches it again.
struct DamagedChunk: Error, CustomStringConvertible {
  let asset: String
  let index: Int
  let reason: String

  var description: String {
    VaultError.chunkDamaged(asset: asset, index: index, reason: reason).description
  }
}

/// The asset was removed from the vault (evicted, `vault rm`) while a read used it.
struct AssetGone: Error {}
