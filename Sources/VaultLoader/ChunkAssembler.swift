import Foundation

/// Collects an origin body (arriving in arbitrary pieces) into whole chunks. The receiver
/// appends from its own task; the storer takes every complete chunk at once, so a fast
/// origin gives large batches (few index commits) and a slow one gives a chunk as soon as it is
/// whole. Unaligned partial chunks stay here, in memory only.
final class ChunkAssembler: @unchecked Sendable {
  /// A run of whole chunks ready to store.
  struct Batch {
    var firstIndex: Int
    var bytes: [UInt8]
  }

  private let lock = NSLock()
  private let chunkSize: Int
  private let length: UInt64
  /// Absolute offset of `buffer[0]`.
  private var base: UInt64
  /// Bytes still to drop before `base` (an origin that ignored Range sends from 0).
  private var skip: UInt64
  /// Absolute offset past which bytes are not wanted.
  private let limit: UInt64
  private var buffer: [UInt8] = []
  private var finished = false
  private var failure: (any Error)?
  private var waiter: CheckedContinuation<Void, Never>?
  private var roomWaiter: CheckedContinuation<Void, Never>?
  private let maximumBatch = 8 << 20
  /// Most bytes held before the receiver waits for the storer's side to take some.
  private let maximumBuffered = 16 << 20
  private(set) var received: UInt64 = 0

  /// - Parameters:
  ///   - bodyStart: absolute offset of the body's first byte.
  ///   - firstChunk: the first chunk to assemble (bytes before it are dropped).
  ///   - limit: absolute offset past which bytes are ignored.
  init(chunkSize: Int, length: UInt64, bodyStart: UInt64, firstChunk: Int, limit: UInt64) {
    self.chunkSize = chunkSize
    self.length = length
    let start = UInt64(firstChunk) * UInt64(chunkSize)
    base = start
    skip = start > bodyStart ? start - bodyStart : 0
    self.limit = min(limit, length)
  }

  /// Adds a piece of body; returns false once everything wanted has arrived.
  func append(_ piece: [UInt8]) -> Bool {
    lock.lock()
    received += UInt64(piece.count)
    var slice = piece[...]
    if skip > 0 {
      let dropped = min(UInt64(slice.count), skip)
      skip -= dropped
      slice = slice.dropFirst(Int(dropped))
    }
    let room = limit > base + UInt64(buffer.count) ? limit - base - UInt64(buffer.count) : 0
    if UInt64(slice.count) > room { slice = slice.prefix(Int(room)) }
    buffer.append(contentsOf: slice)
    let wantMore = base + UInt64(buffer.count) < limit
    let continuation = completeBytes() > 0 || !wantMore ? takeWaiter() : nil
    lock.unlock()
    continuation?.resume()
    return wantMore
  }

  /// Marks the body ended (with an error if the transfer failed). Also called when the
  /// consumer gives up, to release a receiver waiting for room.
  func finish(error: (any Error)?) {
    lock.lock()
    finished = true
    if failure == nil { failure = error }
    let continuation = takeWaiter()
    let room = roomWaiter
    roomWaiter = nil
    lock.unlock()
    continuation?.resume()
    room?.resume()
  }

  /// Returns once fewer than `maximumBuffered` bytes wait here (or the body ended): the
  /// receiver stops pulling the body meanwhile, and so the origin client stops reading.
  func waitForRoom() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      lock.lock()
      if buffer.count < maximumBuffered || finished {
        lock.unlock()
        continuation.resume()
      } else {
        roomWaiter = continuation
        lock.unlock()
      }
    }
  }

  /// Waits for whole chunks; nil once the body ended and no whole chunk is left.
  func nextBatch() async -> Batch? {
    while true {
      // Taken together under the lock: a last piece appended just before `finish` must
      // not be missed between a failed take and the check for the end.
      let (batch, done, room) = lock.withLock {
        let batch = takeBatchLocked()
        var room: CheckedContinuation<Void, Never>?
        if buffer.count < maximumBuffered {
          room = roomWaiter
          roomWaiter = nil
        }
        return (batch, finished, room)
      }
      room?.resume()
      if let batch { return batch }
      if done { return nil }
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        lock.lock()
        if completeBytes() > 0 || finished {
          lock.unlock()
          continuation.resume()
        } else {
          waiter = continuation
          lock.unlock()
        }
      }
    }
  }

  /// The transfer error, if the body ended with one.
  var error: (any Error)? { lock.withLock { failure } }

  /// Absolute offset of the first byte not yet handed out as a whole chunk.
  var position: UInt64 { lock.withLock { base } }

  /// Caller holds the lock.
  private func takeBatchLocked() -> Batch? {
    let whole = min(completeBytes(), maximumBatch - maximumBatch % chunkSize)
    guard whole > 0 else { return nil }
    let batch = Batch(firstIndex: Int(base / UInt64(chunkSize)), bytes: Array(buffer[0..<whole]))
    buffer.removeFirst(whole)
    base += UInt64(whole)
    return batch
  }

  /// Bytes at the front of the buffer that form whole chunks (the asset's short final
  /// chunk counts as whole once it is all there). Caller holds the lock.
  private func completeBytes() -> Int {
    let full = buffer.count - buffer.count % chunkSize
    if base + UInt64(buffer.count) == length { return buffer.count }
    return full
  }

  private func takeWaiter() -> CheckedContinuation<Void, Never>? {
    let continuation = waiter
    waiter = nil
    return continuation
  }
}
