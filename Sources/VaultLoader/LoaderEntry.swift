import Foundation
import VaultCore

/// The loader's state for one asset: what the origin said, which chunks are stored, the
/// fetches in flight, the readers waiting for chunks and the chunks that arrived but are not
/// stored yet. Touched only by the loader actor (hence `@unchecked Sendable`); its storer
/// does its own locking.
final class LoaderEntry: @unchecked Sendable {
  let id: AssetID
  let identity: AssetIdentity
  let url: URL
  let name: String
  var info: ContentInfo
  var generation: UInt64
  var presence: PresenceMap
  var fetches: [Fetch] = []
  var waiters: [Int: [Waiter]] = [:]
  /// The chunk each reader is at, so a fetch does not run far ahead of all its readers.
  var readerPositions: [Int: Int] = [:]
  /// Chunks that arrived from the origin and are being stored: readers take them from
  /// here (no decryption, no waiting for the store); removed once recorded in the index.
  var arrived: [Int: ArraySlice<UInt8>] = [:]
  /// Seals and records arrived chunks in the background.
  let storer: ChunkStorer

  var chunkSize: Int
  var chunkCount: Int { presence.chunkCount }

  init(
    id: AssetID, identity: AssetIdentity, url: URL, name: String, info: ContentInfo,
    generation: UInt64, presence: PresenceMap, chunkSize: Int, storer: ChunkStorer
  ) {
    self.id = id
    self.identity = identity
    self.url = url
    self.name = name
    self.info = info
    self.generation = generation
    self.presence = presence
    self.chunkSize = chunkSize
    self.storer = storer
  }
}

/// One origin request filling chunks [start, end) of an entry; `next` is the first chunk
/// it has not delivered yet. Readers waiting on its chunks are its `interest`; when none is
/// left it is cancelled (an open-ended read that stops early stops the download).
final class Fetch {
  let serial: Int
  let start: Int
  var next: Int
  var end: Int
  var interest: Set<Int> = []
  var task: Task<Void, Never>?
  var cancelled = false
  /// The last chunk its readers want; a window that ends before it may be continued.
  var lastWanted = 0
  /// Stops the current origin transfer (set once its response arrived).
  var stopTransfer: (@Sendable () -> Void)?

  init(serial: Int, start: Int, end: Int) {
    self.serial = serial
    self.start = start
    self.next = start
    self.end = end
  }

  func covers(_ index: Int) -> Bool { index >= next && index < end && !cancelled }
}

/// A reader suspended until a chunk arrives. It is resumed with the chunk's bytes (nil:
/// read it from the vault).
struct Waiter {
  let session: Int
  let continuation: CheckedContinuation<ArraySlice<UInt8>?, any Error>
}

/// Internal signal: the entry moved to a new origin version while the reader waited.
struct GenerationChanged: Error {}
