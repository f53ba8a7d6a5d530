import Dispatch
import Foundation

/// Writes sealed batches to an asset file on a serial background queue, so the kernel's copy
/// into the page cache (the largest cost of re-encryption) overlaps with reading and
/// sealing the next batch. Two buffers alternate: a buffer is handed to ``write`` only
/// after ``acquire`` returned it, i.e. after its previous write finished.
///
/// Thread-safety: the file and each buffer are touched by one thread at a time, ordered by
/// the semaphores; hence `@unchecked Sendable`.
final class SlotWriter: @unchecked Sendable {
  private let file: AssetFile
  private let queue = DispatchQueue(label: "vault.slot-writer")
  private let buffers: [UnsafeMutableRawBufferPointer]
  private let free: [DispatchSemaphore]
  private let lock = NSLock()
  private var failure: (any Error)?

  init(file: AssetFile, bufferSize: Int) {
    self.file = file
    buffers = (0..<2).map { _ in .allocate(byteCount: bufferSize, alignment: 64) }
    free = (0..<2).map { _ in DispatchSemaphore(value: 1) }
  }

  deinit {
    drain()
    for buffer in buffers { buffer.deallocate() }
  }

  /// Waits until buffer `k % 2` is no longer being written, and returns it.
  func acquire(_ k: Int) throws -> UnsafeMutableRawBufferPointer {
    free[k % 2].wait()
    if let error = firstError {
      free[k % 2].signal()
      throw error
    }
    return buffers[k % 2]
  }

  /// Writes the first `length` bytes of buffer `k % 2` at `offset` in the background and
  /// starts their writeback; the buffer is free again afterwards.
  func write(_ k: Int, length: Int, at offset: Int64) {
    let slot = k % 2
    queue.async {
      let buffer = self.buffers[slot]
      do {
        try self.file.write(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), at: offset)
        self.file.startWriteback(at: offset, length: length)
      } catch {
        self.lock.withLock { if self.failure == nil { self.failure = error } }
      }
      self.free[slot].signal()
    }
  }

  /// Waits for every write handed over so far; throws the first write error.
  func finish() throws {
    drain()
    if let error = firstError { throw error }
  }

  private func drain() {
    queue.sync {}
  }

  private var firstError: (any Error)? { lock.withLock { failure } }
}
