import Foundation
import VaultCore

/// The loader's state for one asset: what the origin said, which chunks are stored, the
/// fetches in flight and the readers waiting for chunks. Touched only by the loader actor,
/// except `writer`, which only the entry's store queue uses (hence `@unchecked Sendable`).
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
  /// Holds the asset's writer lock once a fetch needed it; used on `storeQueue` only.
  nonisolated(unsafe) var writer: AssetWriter?
  let storeQueue: DispatchQueue

  var chunkSize: Int
  var chunkCount: Int { presence.chunkCount }

  init(
    id: AssetID, identity: AssetIdentity, url: URL, name: String, info: ContentInfo,
    generation: UInt64, presence: PresenceMap, chunkSize: Int
  ) {
    self.id = id
    self.identity = identity
    self.url = url
    self.name = name
    self.info = info
    self.generation = generation
    self.presence = presence
    self.chunkSize = chunkSize
    storeQueue = DispatchQueue(label: "vault.loader.store.\(id.short)")
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

/// A reader suspended until a chunk is stored.
struct Waiter {
  let session: Int
  let continuation: CheckedContinuation<Void, any Error>
}

/// Internal signal: the entry moved to a new origin version while the reader waited.
struct GenerationChanged: Error {}
