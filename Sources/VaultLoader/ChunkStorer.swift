import Foundation
import VaultCore

/// Seals and records an entry's arrived chunks in the background, off the readers' path.
///
/// Readers get a chunk from memory the moment it arrives; the storer writes it behind
/// them. A store starts once a few MiB are queued (or a batch has waited 30 ms, or someone
/// waits for the backlog), and batches that queue up meanwhile join it (up to 16 MiB): each
/// is written as it is, and all are committed together, so a fast origin costs one index
/// commit per several MiB, not per batch. The file is fsynced when the writer is let go
/// and on ``sync()``, not per commit (AssetWriter.commit(_:syncFirst:)).
/// Its backlog is bounded by the loader: a fetch waits for it before chaining a new window,
/// and so does a reader before starting one.
///
/// All writes happen on one serial queue, which also owns the asset's writer (and so its
/// writer lock): one writer per asset, in order.
final class ChunkStorer: @unchecked Sendable {
  /// What one commit did: the chunks it covered, or why it failed.
  struct Outcome: Sendable {
    var chunks: [Range<Int>]
    var newlyStored: Int
    var error: (any Error)?
  }

  private let lock = NSLock()
  private let queue: DispatchQueue
  /// Syncs and records what `queue` wrote, in order.
  private let commitQueue: DispatchQueue
  /// One commit in flight at a time: the writer stage waits for it before queueing another.
  private let commitSlot = DispatchSemaphore(value: 1)
  private let openWriter: @Sendable () throws -> AssetWriter
  private let generation: UInt64
  private let chunkSize: Int
  private let report: @Sendable () -> Void
  /// Most bytes one commit covers (the batches in it are written one by one, so the
  /// sealing buffer is bounded by a batch, not by this).
  private let maximumRun = 16 << 20
  /// A store starts once this much is queued (or `linger` after the first queued batch, or
  /// when someone waits for the backlog): each store costs an index commit (a WAL fsync),
  /// and starting one per arriving chunk cost thousands of them per GiB.
  private let minimumRun = 4 << 20
  /// Longest a queued batch waits for more to join it.
  private let linger: DispatchTimeInterval = .milliseconds(30)
  private var lingerArmed = false
  private var pending: [ChunkAssembler.Batch] = []
  private var backlogBytes = 0
  private var draining = false
  private var closed = false
  private var backlogWaiters: [(limit: Int, continuation: CheckedContinuation<Void, Never>)] = []
  private var failureValue: (any Error)?
  private var completed: [Outcome] = []
  /// Used on `queue` only.
  nonisolated(unsafe) private var writer: AssetWriter?
  /// Counts drains, on `queue` only: an idle timer releases the writer only if no drain
  /// ran since it was set.
  nonisolated(unsafe) private var drains = 0
  /// Seconds without stores after which the writer (and the asset's writer lock) is
  /// released, so an idle asset can be evicted or written by another process.
  private let idleRelease: Double = 2
  /// Longest wait for another writer of the same asset to finish.
  private let busyWait: Double = 30

  /// - Parameters:
  ///   - label: names the queue (for debuggers).
  ///   - generation: the generation every store must still be writing.
  ///   - openWriter: opens (or continues) the asset's writer on first use, on the queue.
  ///   - report: called on the queue after each store call; the outcomes wait in
  ///     ``takeCompleted()`` (so a caller that waited for the backlog can apply them at
  ///     once instead of racing the notification).
  init(
    label: String, generation: UInt64, chunkSize: Int,
    openWriter: @escaping @Sendable () throws -> AssetWriter,
    report: @escaping @Sendable () -> Void
  ) {
    queue = DispatchQueue(label: label)
    commitQueue = DispatchQueue(label: label + ".commit")
    self.generation = generation
    self.chunkSize = chunkSize
    self.openWriter = openWriter
    self.report = report
  }

  /// Hands over a writer opened earlier (it already holds the writer lock).
  func adopt(_ writer: AssetWriter) {
    let box = WriterBox(writer: writer)
    queue.async { self.writer = box.writer }
  }

  /// Queues a batch of whole chunks for sealing.
  func enqueue(_ batch: ChunkAssembler.Batch) {
    guard !batch.bytes.isEmpty else { return }
    lock.lock()
    if closed {
      lock.unlock()
      return
    }
    pending.append(batch)
    backlogBytes += batch.bytes.count
    let start = !draining && backlogBytes >= minimumRun
    if start { draining = true }
    let arm = !draining && !lingerArmed
    if arm { lingerArmed = true }
    lock.unlock()
    if start { queue.async { self.drain() } }
    if arm { queue.asyncAfter(deadline: .now() + linger) { self.lingerEnded() } }
  }

  /// Runs on `queue`: whatever waited `linger` for company is stored now.
  private func lingerEnded() {
    let start = lock.withLock {
      lingerArmed = false
      guard !draining, !pending.isEmpty else { return false }
      draining = true
      return true
    }
    if start { drain() }
  }

  /// Outcomes of the store calls since the last call, in order.
  func takeCompleted() -> [Outcome] {
    lock.withLock {
      let outcomes = completed
      completed = []
      return outcomes
    }
  }

  /// Bytes queued or being stored.
  var backlog: Int { lock.withLock { backlogBytes } }

  /// One line of state for ``RangeLoader/diagnostics()``.
  var diagnostics: String {
    lock.withLock {
      "storer backlog \(backlogBytes) B in \(pending.count) batches, draining \(draining), "
        + "closed \(closed), backlog waiters \(backlogWaiters.map(\.limit)), "
        + "failure \(failureValue.map { "\($0)" } ?? "none")"
    }
  }

  /// The first store error, if any (later batches are dropped once one failed).
  var failure: (any Error)? { lock.withLock { failureValue } }

  /// Returns once the backlog is at most `limit` bytes (or the storer failed or closed).
  func waitForBacklog(atMost limit: Int) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      lock.lock()
      if backlogBytes <= limit || failureValue != nil || closed {
        lock.unlock()
        continuation.resume()
      } else {
        backlogWaiters.append((limit, continuation))
        // Someone waits for it: store now rather than wait for a full run.
        let start = !draining && !pending.isEmpty
        if start { draining = true }
        lock.unlock()
        if start { queue.async { self.drain() } }
      }
    }
  }

  /// Drops what is queued and releases the writer (and its lock) once the store in
  /// progress, if any, is done: nothing is half-recorded.
  func close() {
    lock.lock()
    closed = true
    pending = []
    backlogBytes = 0
    let waiters = backlogWaiters
    backlogWaiters = []
    lock.unlock()
    for waiter in waiters { waiter.continuation.resume() }
    queue.async { self.release() }
  }

  /// Syncs what the writer recorded without a sync. Call after the backlog drained.
  func sync() async throws {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Void, any Error>) in
      queue.async {
        continuation.resume(with: Result { try self.writer?.syncRecorded() })
      }
    }
  }

  /// Runs on `queue`: syncs and lets go of the writer (and the asset's writer lock). A
  /// failed sync is not an error here: the chunks are recorded, and any that did not reach
  /// the disk fail their tag check when read and are fetched again.
  private func release() {
    try? writer?.syncRecorded()
    writer = nil
  }

  /// Runs on `queue`: stores queued batches, several per commit. Two stages: this
  /// queue seals and writes a run, `commitQueue` records it, so the next run is
  /// written while the disk syncs the last (at most one commit in flight).
  private func drain() {
    while let run = takeRun() {
      let chunks = run.map { $0.firstIndex..<($0.firstIndex + chunksIn($0)) }
      var written: (writer: WriterBox, pending: PendingChunks)?
      var failure: (any Error)?
      do {
        if writer == nil { writer = try openWriterWaiting() }
        guard let writer, writer.generation == generation else { throw GenerationChanged() }
        let parts = try run.map { batch in
          try batch.bytes.withUnsafeBytes {
            try writer.write(firstIndex: batch.firstIndex, plaintext: $0)
          }
        }
        written = (WriterBox(writer: writer), PendingChunks(combining: parts))
      } catch {
        failure = error
        // Seen by `takeRun` at once: nothing after a failed run is written.
        lock.withLock { if failureValue == nil { failureValue = error } }
      }
      commitSlot.wait()
      let bytes = run.reduce(0) { $0 + $1.bytes.count }
      let (toCommit, writeError) = (written, failure)
      commitQueue.async {
        var outcome = Outcome(chunks: chunks, newlyStored: 0, error: writeError)
        if let written = toCommit {
          do {
            // Recorded now, synced when the writer is let go (or on `sync()`): the reader
            // is not held to the disk's sync speed, and the tag catches a chunk an OS
            // crash lost (AssetWriter.commit(_:syncFirst:)).
            try written.writer.writer.commit(written.pending, syncFirst: false)
            outcome.newlyStored = written.pending.count
          } catch {
            outcome.error = error
          }
        }
        if let error = outcome.error {
          self.lock.withLock { if self.failureValue == nil { self.failureValue = error } }
        }
        self.lock.withLock { self.completed.append(outcome) }
        self.commitSlot.signal()
        self.report()
        self.settle(stored: bytes)
      }
    }
    drains += 1
    let mark = drains
    queue.asyncAfter(deadline: .now() + idleRelease) {
      let idle = self.lock.withLock { self.pending.isEmpty && !self.draining }
      if idle && self.drains == mark { self.release() }
    }
  }

  /// Opens the writer; while another writer (another process, or another loader) holds
  /// the asset, waits for it: writers of one asset are serialised, not failed. Bounded:
  /// after `busyWait` seconds the store fails with `assetBusy`.
  private func openWriterWaiting() throws -> AssetWriter {
    let deadline = Date().addingTimeInterval(busyWait)
    while true {
      do {
        return try openWriter()
      } catch VaultError.assetBusy(let asset) {
        if Date() >= deadline || lock.withLock({ closed }) { throw VaultError.assetBusy(asset) }
        usleep(50_000)
      }
    }
  }

  /// Takes queued batches, up to `maximumRun` bytes (at least one): they are written one by
  /// one (no merged copy) and committed together.
  private func takeRun() -> [ChunkAssembler.Batch]? {
    lock.lock()
    guard !pending.isEmpty, failureValue == nil, !closed else {
      draining = false
      var waiters: [CheckedContinuation<Void, Never>] = []
      if failureValue != nil || closed {
        pending = []
        backlogBytes = 0
        // Whoever waits for the backlog must hear that it is gone.
        waiters = backlogWaiters.map(\.continuation)
        backlogWaiters = []
      }
      lock.unlock()
      for waiter in waiters { waiter.resume() }
      return nil
    }
    defer { lock.unlock() }
    var run = [pending.removeFirst()]
    var bytes = run[0].bytes.count
    while let next = pending.first, bytes + next.bytes.count <= maximumRun {
      run.append(pending.removeFirst())
      bytes += next.bytes.count
    }
    return run
  }

  private func chunksIn(_ batch: ChunkAssembler.Batch) -> Int {
    (batch.bytes.count + chunkSize - 1) / chunkSize
  }

  private func settle(stored bytes: Int) {
    lock.lock()
    backlogBytes = max(0, backlogBytes - bytes)
    var ready: [CheckedContinuation<Void, Never>] = []
    backlogWaiters.removeAll { waiter in
      if backlogBytes <= waiter.limit || failureValue != nil {
        ready.append(waiter.continuation)
        return true
      }
      return false
    }
    lock.unlock()
    for continuation in ready { continuation.resume() }
  }
}

/// Moves a writer onto the store queue.
private struct WriterBox: @unchecked Sendable {
  let writer: AssetWriter
}
