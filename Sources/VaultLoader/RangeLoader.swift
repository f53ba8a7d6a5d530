import Foundation
import VaultCore

/// Answers byte ranges of origin resources from the vault, fetching only missing chunks.
///
/// - Each run of missing chunks becomes one chunk-aligned origin request whose body is
///   sealed and recorded as it arrives; readers get each chunk as soon as it is stored.
/// - Single-flight: readers of the same missing chunk share one origin request; a request
///   nobody waits for any more is cancelled (chunks already stored are kept).
/// - Every range request carries `If-Range` with the stored validator. A 200 answer with a
///   new validator or length starts a new generation of the asset; a reader that already
///   delivered bytes of the old version fails with ``LoaderError/originChanged(url:)``
///   rather than mixing versions.
/// - An origin that ignores `Range` is streamed from byte 0; every complete chunk on the way
///   is stored.
/// - Offline mode serves only what is stored.
public actor RangeLoader {
  /// The vault bytes are kept in.
  public nonisolated let vault: Vault
  /// Whether the loader may contact origins.
  public nonisolated let offline: Bool
  let origin: any Origin
  var entries: [AssetID: LoaderEntry] = [:]
  var probes: [AssetID: Task<LoaderEntry, any Error>] = [:]
  var stats = LoaderStatistics()
  var serial = 0
  /// A reader more than this many chunks ahead of a fetch starts its own (a seek).
  let joinWindow = 4
  /// Attempts per fetch without progress before it fails.
  let attempts = 4
  /// How far (bytes) a fetch may run ahead of the furthest reader it serves before it
  /// stops; a reader that catches up starts a new one. Bounds what a slow or paused player
  /// downloads, without throttling one that keeps up.
  let readAhead = 8 << 20

  /// Counters not yet added to the vault's persistent ones (`vault stats`).
  var unsavedCounters = LoaderStatistics()
  var countersSavedAt = Date()
  var limitsCheckedAt = Date.distantPast
  var limitsCheckScheduled = false
  let log: @Sendable (String) -> Void

  /// Creates a loader.
  /// - Parameters:
  ///   - vault: where bytes are kept.
  ///   - origin: how missing bytes are fetched (default: URLSession).
  ///   - offline: serve only what is stored.
  ///   - log: gets one line per notable event (a damaged chunk dropped and refetched,
  ///     assets evicted); default: none.
  public init(
    vault: Vault, origin: any Origin = HTTPOrigin(), offline: Bool = false,
    log: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    self.vault = vault
    self.origin = origin
    self.offline = offline
    self.log = log
  }

  /// What the loader has done so far.
  public var statistics: LoaderStatistics { stats }

  /// The asset id a URL (or an explicit content id, which overrides it) maps to.
  public nonisolated func assetID(for url: URL, contentID: String? = nil) throws -> AssetID {
    try LoaderIdentity.resolve(vault: vault, url: url, contentID: contentID).id
  }

  /// Length, type, range support and validator of a resource: from the vault when stored,
  /// else probed with `GET Range: bytes=0-1`.
  public func contentInfo(for url: URL, contentID: String? = nil) async throws -> ContentInfo {
    try await entry(url: url, contentID: contentID).info
  }

  /// Reads bytes `start...end` (inclusive; `end` nil means to the end of the resource).
  /// The sequence pulls: a slow consumer slows the read, one that stops early releases its
  /// claim on the origin request.
  public nonisolated func read(
    _ url: URL, contentID: String? = nil, from start: UInt64 = 0, through end: UInt64? = nil
  ) -> LoaderRead {
    LoaderRead(loader: self, url: url, contentID: contentID, start: start, end: end)
  }

  /// Warms the first `bytes` (nil: all) of a resource; with `pin`, the asset is pinned so
  /// eviction never removes it (for offline use).
  /// - Returns: the bytes now stored for that range.
  @discardableResult
  public func prefetch(
    _ url: URL, contentID: String? = nil, bytes: UInt64? = nil, pin: Bool = false
  ) async throws -> UInt64 {
    let info = try await entry(url: url, contentID: contentID).info
    let end = min(bytes ?? info.length, info.length)
    var total: UInt64 = 0
    if end > 0 {
      var warm = read(url, contentID: contentID, from: 0, through: end - 1)
      warm.countsAsPlay = false  // downloading for later is not a play
      for try await piece in warm {
        total += UInt64(piece.count)
      }
    }
    try await flush()
    if pin {
      try mapVault { try vault.setPinned(try assetID(for: url, contentID: contentID), true) }
    }
    return total
  }

  /// Returns once every chunk that has arrived so far is sealed, recorded in the vault and
  /// synced to disk (readers get chunks before that). Call it before exiting a process that read through
  /// the loader, so what it downloaded stays cached.
  /// - Throws: the first store error, as ``LoaderError/vault(_:)``.
  public func flush() async throws {
    for entry in Array(entries.values) {
      await entry.storer.waitForBacklog(atMost: 0)
      applyStores(id: entry.id, generation: entry.generation)
      if let error = entry.storer.failure { throw storeError(error) }
      do {
        try await entry.storer.sync()
      } catch {
        throw storeError(error)
      }
    }
    saveCounters()
  }

  // MARK: Entries

  func entry(url: URL, contentID: String?) async throws -> LoaderEntry {
    let (identity, id) = try LoaderIdentity.resolve(vault: vault, url: url, contentID: contentID)
    if let entry = entries[id] { return entry }
    if let probe = probes[id] { return try await probe.value }
    // The entry is registered by the probe task itself, in the same actor turn that creates
    // it: every reader awaiting the probe then finds it in `entries`.
    let probe = Task {
      defer { self.probes[id] = nil }
      let entry = try await self.makeEntry(
        id: id, identity: identity, url: url, contentID: contentID)
      self.entries[id] = entry
      return entry
    }
    probes[id] = probe
    let entry = try await probe.value
    return entry
  }

  private func makeEntry(
    id: AssetID, identity: AssetIdentity, url: URL, contentID: String?
  ) async throws -> LoaderEntry {
    let name =
      contentID ?? (url.lastPathComponent.isEmpty ? url.absoluteString : url.lastPathComponent)
    if let entry = storedEntry(id: id, identity: identity, url: url, name: name) {
      return entry
    }
    guard !offline else {
      throw LoaderError.offlineMissing(url: url.absoluteString, start: 0, end: 0)
    }
    let info = try await probe(url)
    let deadline = Date().addingTimeInterval(30)
    while true {
      do {
        let writer = try vault.beginFill(
          identity: identity, length: info.length, validator: info.validator,
          metadata: AssetMetadata(
            name: name, contentType: info.contentType, originURL: url.absoluteString))
        let storer = makeStorer(
          id: id, identity: identity, url: url, name: name, info: info,
          generation: writer.generation, chunkSize: writer.chunkSize)
        storer.adopt(writer)
        return LoaderEntry(
          id: id, identity: identity, url: url, name: name, info: info,
          generation: writer.generation, presence: try mapVault { try writer.presence() },
          chunkSize: writer.chunkSize, storer: storer)
      } catch VaultError.assetBusy(let asset) {
        // Another process is creating or filling this asset: once its record is there,
        // use it (our stores then take turns with that writer).
        if let entry = storedEntry(id: id, identity: identity, url: url, name: name) {
          return entry
        }
        guard Date() < deadline else {
          throw LoaderError.vault(VaultError.assetBusy(asset).description)
        }
        try await Task.sleep(nanoseconds: 50_000_000)
      } catch let error as VaultError {
        throw LoaderError.vault(error.description)
      }
    }
  }

  /// An entry for an asset the vault already holds (no origin request), or nil.
  private func storedEntry(id: AssetID, identity: AssetIdentity, url: URL, name: String)
    -> LoaderEntry?
  {
    guard let stored = try? vault.info(id), let reader = try? vault.reader(for: id) else {
      return nil
    }
    let info = ContentInfo(
      length: stored.size, contentType: stored.contentType, acceptsRanges: true,
      validator: stored.validator)
    return LoaderEntry(
      id: id, identity: identity, url: url, name: name, info: info,
      generation: stored.generation, presence: reader.presence, chunkSize: stored.chunkSize,
      storer: makeStorer(
        id: id, identity: identity, url: url, name: name, info: info,
        generation: stored.generation, chunkSize: stored.chunkSize))
  }

  /// The entry's background storer: opens (or continues) the generation's writer when it
  /// first needs one, and reports each store back to the actor.
  private func makeStorer(
    id: AssetID, identity: AssetIdentity, url: URL, name: String, info: ContentInfo,
    generation: UInt64, chunkSize: Int
  ) -> ChunkStorer {
    let vault = self.vault
    return ChunkStorer(
      label: "vault.loader.store.\(id.short)", generation: generation, chunkSize: chunkSize,
      openWriter: {
        // Only this generation: if it was evicted or replaced meanwhile, storing into a
        // fresh one would leave the entry's presence mirror wrong.
        try vault.resumeFill(id, generation: generation)
      },
      report: { [weak self] in
        guard let self else { return }
        Task { await self.applyStores(id: id, generation: generation) }
      })
  }

  /// `GET Range: bytes=0-1`: 206 gives the length from Content-Range; 200 means the origin
  /// ignores ranges (length from Content-Length); the body is not kept. A transient failure
  /// (a transport error, a 5xx) is retried with backoff, as a fetch's is: a player's first
  /// request must not fail on one hiccup of the origin.
  func probe(_ url: URL) async throws -> ContentInfo {
    var failures = 0
    while true {
      do {
        return try await probeOnce(url)
      } catch {
        failures += 1
        guard failures < attempts, isRetryable(error), !Task.isCancelled else { throw error }
        try await Task.sleep(nanoseconds: UInt64(100_000_000) << UInt64(failures - 1))
      }
    }
  }

  private func probeOnce(_ url: URL) async throws -> ContentInfo {
    stats.originRequests += 1
    let response = try await origin.send(OriginRequest(url: url, rangeStart: 0, rangeEnd: 1))
    defer { response.cancel() }
    let type = response.header("content-type")
    switch response.status {
    case 206:
      guard let range = response.header("content-range").flatMap(ContentRange.init),
        let total = range.total
      else {
        throw LoaderError.originMisbehaved(
          url: url.absoluteString, reason: "206 without a usable Content-Range")
      }
      return ContentInfo(
        length: total, contentType: type, acceptsRanges: true, validator: response.validator)
    case 200:
      guard let length = response.header("content-length").flatMap({ UInt64($0) }) else {
        throw LoaderError.originMisbehaved(
          url: url.absoluteString, reason: "no length (Content-Length) given")
      }
      return ContentInfo(
        length: length, contentType: type, acceptsRanges: false, validator: response.validator)
    case 416:
      // Only an empty resource cannot satisfy bytes=0-1.
      if let range = response.header("content-range").flatMap(ContentRange.init), range.total == 0 {
        return ContentInfo(
          length: 0, contentType: type, acceptsRanges: true, validator: response.validator)
      }
      throw LoaderError.originStatus(url: url.absoluteString, status: 416)
    default:
      throw LoaderError.originStatus(url: url.absoluteString, status: response.status)
    }
  }

  // MARK: Waiting for chunks

  /// Resolves the session's resource: its entry, length, generation and validator.
  func prepare(_ session: ReadSession) async throws -> (
    id: AssetID, length: UInt64, chunkSize: Int, generation: UInt64, stored: PresenceMap,
    validator: String?
  ) {
    let entry = try await entry(url: session.url, contentID: session.contentID)
    // DRM-lite: the asset's lease decides (and counts the play) before any byte is read.
    try vault.authorizeRead(entry.id, from: session.start, countsAsPlay: session.countsAsPlay)
    applyStores(id: entry.id, generation: entry.generation)
    vault.noteAccess(entry.id)
    return (
      entry.id, entry.info.length, entry.chunkSize, entry.generation, entry.presence,
      entry.info.validator
    )
  }

  /// The asset behind an entry is gone from the vault (evicted or removed by another
  /// process): drop the entry, so the next read starts over from the origin.
  func forget(_ id: AssetID, generation: UInt64) {
    guard let entry = entries[id], entry.generation == generation else { return }
    fail(entry, GenerationChanged())
    entry.storer.close()
  }

  /// The chunks after `index`, through `last`, that are in memory now (arrived, not stored
  /// yet), up to the first that is not: what a reader can take along without waiting.
  func arrived(_ id: AssetID, generation: UInt64, after index: Int, through last: Int)
    -> [ArraySlice<UInt8>]
  {
    guard let entry = entries[id], entry.generation == generation, index < last else {
      return []
    }
    var run: [ArraySlice<UInt8>] = []
    for next in (index + 1)...last {
      guard !entry.presence.contains(next), let bytes = entry.arrived[next] else { break }
      run.append(bytes)
    }
    return run
  }

  /// Returns once chunk `index` is available, starting or joining a fetch: its bytes if it
  /// is in memory (arrived, maybe not stored yet), nil if it is to be read from the vault.
  func chunk(_ id: AssetID, _ index: Int, session: ReadSession) async throws -> ArraySlice<
    UInt8
  >? {
    guard let entry = entries[id] else { throw GenerationChanged() }
    entry.readerPositions[session.id] = index
    if entry.presence.contains(index) { return nil }
    guard entry.generation == session.generation else { throw GenerationChanged() }
    if let bytes = entry.arrived[index] { return bytes }
    guard !offline else {
      let end = (index + 1) * entry.chunkSize - 1
      throw LoaderError.offlineMissing(
        url: entry.url.absoluteString, start: UInt64(index * entry.chunkSize),
        end: min(UInt64(end), entry.info.length - 1))
    }
    let fetch: Fetch
    if let existing = entry.fetches.first(where: {
      // Without Range support a fetch streams from 0 anyway: join it wherever it is.
      $0.covers(index) && (index - $0.next <= joinWindow || !entry.info.acceptsRanges)
    }) {
      fetch = existing
    } else if entry.storer.backlog > readAhead {
      // Chunks arrive faster than the disk takes them: let the store catch up before
      // downloading more, so memory holds at most about two windows (the wait inside a
      // fetch does this for windows it chains; a reader starting the next one must too).
      await entry.storer.waitForBacklog(atMost: readAhead)
      return try await chunk(id, index, session: session)
    } else {
      fetch = startFetch(entry, from: index, lastWanted: session.lastChunk(entry.chunkSize))
    }
    fetch.interest.insert(session.id)
    let sessionID = session.id
    return try await withTaskCancellationHandler {
      try await self.wait(for: index, of: entry, session: sessionID)
    } onCancel: {
      Task { await self.abandon(session: sessionID, entry: id) }
    }
  }

  /// Suspends the reader until chunk `index` arrives (or is stored, or the read fails).
  ///
  /// A method of its own so the continuation body provably runs on the actor: an async
  /// closure that does not capture `self` (such as a `withTaskCancellationHandler`
  /// operation) is nonisolated in Swift 6, and registering the waiter from one raced the
  /// actor's `deliver` (lost wake-ups, a corrupted `waiters` dictionary).
  private func wait(for index: Int, of entry: LoaderEntry, session: Int) async throws
    -> ArraySlice<UInt8>?
  {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<ArraySlice<UInt8>?, any Error>) in
      self.preconditionIsolated("a reader registered its wait off the loader actor")
      if entry.presence.contains(index) {
        continuation.resume(returning: nil)
      } else if let bytes = entry.arrived[index] {
        continuation.resume(returning: bytes)
      } else if entries[entry.id] !== entry {
        // The entry failed or was replaced while the reader hopped here.
        continuation.resume(throwing: GenerationChanged())
      } else {
        entry.waiters[index, default: []].append(
          Waiter(session: session, continuation: continuation))
        // The fetch chosen for it may have ended during the hop: never wait on nothing.
        if !entry.fetches.contains(where: { $0.covers(index) }) { resumeOrphans(entry) }
      }
    }
  }

  /// A reader stopped (finished, cancelled or dropped): it waits for nothing any more, and
  /// fetches nobody else waits for are cancelled.
  func abandon(session: Int, entry id: AssetID?) {
    guard let entry = id.flatMap({ entries[$0] }) else { return }
    entry.readerPositions[session] = nil
    for (index, list) in entry.waiters {
      let (mine, others) = (
        list.filter { $0.session == session }, list.filter { $0.session != session }
      )
      for waiter in mine { waiter.continuation.resume(throwing: CancellationError()) }
      entry.waiters[index] = others.isEmpty ? nil : others
    }
    for fetch in entry.fetches where fetch.interest.remove(session) != nil && fetch.interest.isEmpty
    {
      cancel(fetch, in: entry)
    }
    resumeOrphans(entry)
  }

  /// Safety net: readers still waiting on chunks that no live fetch will deliver get a new
  /// fetch, so no reader can wait forever: a fetch chosen for a reader can end (or fail)
  /// while the reader hops onto the actor to register its wait.
  private func resumeOrphans(_ entry: LoaderEntry) {
    guard entries[entry.id] === entry, !offline else { return }
    let orphans = entry.waiters.keys.sorted().filter { index in
      !entry.presence.contains(index) && entry.arrived[index] == nil
        && !entry.fetches.contains { $0.covers(index) }
    }
    guard let first = orphans.first else { return }
    let sessions = Set(orphans.flatMap { entry.waiters[$0]?.map(\.session) ?? [] })
    let fetch = startFetch(entry, from: first, lastWanted: orphans.last ?? first)
    fetch.interest.formUnion(sessions)
  }

  /// The reader moved past chunk `index`: fetches that end before it no longer serve it.
  func passed(_ session: ReadSession, chunk index: Int) {
    guard let entry = session.assetID.flatMap({ entries[$0] }) else { return }
    entry.readerPositions[session.id] = index
    for fetch in entry.fetches where fetch.end <= index && fetch.interest.contains(session.id) {
      fetch.interest.remove(session.id)
      if fetch.interest.isEmpty { cancel(fetch, in: entry) }
    }
  }

  func noteDelivered(_ bytes: Int, chunks: Int = 1, fromCache: Bool) {
    stats.bytesDelivered += UInt64(bytes)
    unsavedCounters.bytesDelivered += UInt64(bytes)
    if fromCache {
      stats.bytesFromCache += UInt64(bytes)
      stats.hits += chunks
      unsavedCounters.bytesFromCache += UInt64(bytes)
      unsavedCounters.hits += chunks
    } else {
      stats.misses += chunks
      unsavedCounters.misses += chunks
    }
    if Date().timeIntervalSince(countersSavedAt) > 2 { saveCounters() }
  }

  private func enforceScheduledCheck() {
    limitsCheckScheduled = false
    enforceLimitsSoon()
  }

  /// Adds what happened since the last call to the vault's persistent counters.
  func saveCounters() {
    let c = unsavedCounters
    unsavedCounters = LoaderStatistics()
    countersSavedAt = Date()
    try? vault.addCounters(
      hits: c.hits, misses: c.misses, bytesFromCache: c.bytesFromCache,
      bytesFromOrigin: c.bytesFromOrigin)
  }

  /// A stored chunk failed to open: drop it from the presence map (index and mirror) so
  /// the next read fetches it again, and say so.
  func dropDamaged(_ id: AssetID, chunk index: Int, generation: UInt64, reason: String) {
    let dropped =
      (try? vault.dropDamagedChunks(id, generation: generation, indices: [index])) ?? 0
    if let entry = entries[id], entry.generation == generation {
      entry.presence.remove(index)
    }
    stats.chunksRepaired += 1
    log(
      "asset \(id.short): chunk \(index) failed to open (\(reason)); "
        + (dropped > 0 ? "dropped, fetching it again" : "already dropped"))
  }

  /// Applies the vault's cache limits (at most once a second, off the actor), never
  /// evicting an asset this loader has open.
  func enforceLimitsSoon() {
    let since = Date().timeIntervalSince(limitsCheckedAt)
    guard since >= 1 else {
      // Checked less than a second ago: check once more when the second is up, so the
      // last stores of a burst are not left over the limit.
      guard !limitsCheckScheduled else { return }
      limitsCheckScheduled = true
      Task {
        try? await Task.sleep(nanoseconds: UInt64((1 - since) * 1e9) + 1_000_000)
        self.enforceScheduledCheck()
      }
      return
    }
    limitsCheckedAt = Date()
    // Assets being read or fetched right now are not evicted under their readers.
    let active = entries.values.filter {
      !$0.fetches.isEmpty || !$0.readerPositions.isEmpty || !$0.arrived.isEmpty
    }
    let (vault, log, busy) = (vault, log, Set(active.map(\.id)))
    Task.detached {
      // An asset whose writer was released only moments ago (2 s after its last store)
      // is still busy: try again a few times rather than stay over the limit.
      for attempt in 0..<4 {
        if attempt > 0 { try? await Task.sleep(nanoseconds: 2_500_000_000) }
        let limits = (try? vault.cacheLimits()) ?? .none
        guard !limits.isEmpty,
          let report = try? vault.prune(limits: limits, protecting: busy)
        else { return }
        if !report.evicted.isEmpty {
          log(
            "evicted \(report.evicted.count) assets "
              + "(\(report.bytesBefore - report.bytesAfter) bytes) to fit the vault's limits")
        }
        let over = limits.maxBytes.map { report.bytesAfter > $0 } ?? false
        if report.busy.isEmpty || !over { return }
      }
    }
  }

  private func cancel(_ fetch: Fetch, in entry: LoaderEntry) {
    fetch.cancelled = true
    // Stop the transfer now; whole chunks that already arrived are still stored.
    fetch.stopTransfer?()
    fetch.task?.cancel()
    entry.fetches.removeAll { $0 === fetch }
  }

  // MARK: Fetching

  private func startFetch(_ entry: LoaderEntry, from index: Int, lastWanted: Int) -> Fetch {
    var end: Int
    if entry.info.acceptsRanges {
      // One request covers at most the read-ahead window; `continueIfWanted` chains the next.
      let window = max(1, readAhead / entry.chunkSize)
      end = min(lastWanted + 1, entry.chunkCount, index + window)
      // Stop at the next stored chunk or the next fetch's start: never fetch a byte twice.
      if let stored = (index..<end).first(where: {
        entry.presence.contains($0) || entry.arrived[$0] != nil
      }) {
        end = stored
      }
      for other in entry.fetches where other.next > index && other.next < end { end = other.next }
    } else {
      // Without Range support every request streams from byte 0: one request to the end,
      // keeping every chunk on the way, instead of one per window (which would be quadratic).
      end = entry.chunkCount
    }
    // A fetch whose range we now start inside stops where we begin (a seek forward).
    for other in entry.fetches where other.covers(index) && entry.info.acceptsRanges {
      other.end = index
    }
    serial += 1
    let fetch = Fetch(serial: serial, start: index, end: max(end, index + 1))
    fetch.lastWanted = lastWanted
    entry.fetches.append(fetch)
    fetch.task = Task { await self.run(fetch, entry) }
    return fetch
  }

  private func run(_ fetch: Fetch, _ entry: LoaderEntry) async {
    var failures = 0
    var lastError: any Error = LoaderError.transport(
      url: entry.url.absoluteString, reason: "no attempt made")
    while fetch.next < fetch.end && !fetch.cancelled && !Task.isCancelled {
      let progressBefore = fetch.next
      do {
        try await attempt(fetch, entry)
      } catch is CancellationError {
        break
      } catch let error as GenerationChanged {
        fail(entry, error)
        return
      } catch {
        lastError = error
      }
      if fetch.next == progressBefore {
        failures += 1
        if failures >= attempts || !isRetryable(lastError) {
          finish(fetch, entry, failing: lastError)
          return
        }
        try? await Task.sleep(nanoseconds: UInt64(100_000_000) << UInt64(failures - 1))
      } else {
        failures = 0
      }
    }
    // Chain the next window only once the store has caught up to within a window: a
    // slow disk slows the download instead of piling chunks up in memory.
    if !fetch.cancelled {
      await entry.storer.waitForBacklog(atMost: readAhead)
      if let error = entry.storer.failure {
        finish(fetch, entry, failing: storeError(error))
        return
      }
    }
    continueIfWanted(fetch, entry)
    finish(fetch, entry, failing: nil)
  }

  /// A window completed: if its readers want more and one of them is within a window of
  /// its end, the next window starts now (a reader that keeps up never waits on a request);
  /// if all of them are further behind (paused, slow), nothing more is downloaded for now.
  private func continueIfWanted(_ fetch: Fetch, _ entry: LoaderEntry) {
    guard !fetch.cancelled, !Task.isCancelled, entries[entry.id] === entry,
      fetch.next >= fetch.end, fetch.end <= fetch.lastWanted, fetch.end < entry.chunkCount,
      !entry.presence.contains(fetch.end), entry.arrived[fetch.end] == nil,
      !entry.fetches.contains(where: { $0 !== fetch && $0.covers(fetch.end) })
    else { return }
    let window = max(1, readAhead / entry.chunkSize)
    let furthest = fetch.interest.compactMap { entry.readerPositions[$0] }.max() ?? -1
    // Within half a window of the end: the download stays at most 1.5 windows ahead.
    guard furthest >= 0, fetch.end - furthest <= window / 2 else { return }
    let next = startFetch(entry, from: fetch.end, lastWanted: fetch.lastWanted)
    next.interest = fetch.interest
  }

  private func isRetryable(_ error: any Error) -> Bool {
    switch error {
    case LoaderError.transport, LoaderError.originStatus(_, 500...599): return true
    case LoaderError.originMisbehaved(_, let reason): return reason.hasPrefix("body ended")
    default: return false
    }
  }

  /// One origin request for chunks [fetch.next, fetch.end).
  private func attempt(_ fetch: Fetch, _ entry: LoaderEntry) async throws {
    let chunk = UInt64(entry.chunkSize)
    let start = UInt64(fetch.next) * chunk
    let last = min(UInt64(fetch.end) * chunk, entry.info.length) - 1
    let url = entry.url.absoluteString
    let request =
      entry.info.acceptsRanges
      ? OriginRequest(
        url: entry.url, rangeStart: start, rangeEnd: last, ifRange: entry.info.validator)
      : OriginRequest(url: entry.url)
    stats.originRequests += 1
    let response = try await origin.send(request)
    defer { response.cancel() }
    fetch.stopTransfer = response.cancel
    if fetch.cancelled { return }
    var bodyStart: UInt64 = 0
    switch response.status {
    case 206:
      guard let range = response.header("content-range").flatMap(ContentRange.init),
        let rangeStart = range.start, let rangeEnd = range.end
      else {
        throw LoaderError.originMisbehaved(url: url, reason: "206 without a usable Content-Range")
      }
      guard range.total == nil || range.total == entry.info.length else {
        try await switchGeneration(entry, response: response, length: range.total)
        throw GenerationChanged()
      }
      guard rangeStart == start, rangeEnd <= last, rangeEnd >= start else {
        throw LoaderError.originMisbehaved(
          url: url,
          reason: "asked for bytes \(start)-\(last), Content-Range says \(rangeStart)-\(rangeEnd)")
      }
      bodyStart = start
    case 200:
      let length = response.header("content-length").flatMap { UInt64($0) }
      let changed =
        (length != nil && length != entry.info.length)
        || (entry.info.validator != nil && response.validator != nil
          && response.validator != entry.info.validator)
      if changed {
        try await switchGeneration(entry, response: response, length: length)
        throw GenerationChanged()
      }
      // The origin ignores Range: stream from byte 0 to the end, keeping every chunk.
      entry.info.acceptsRanges = false
      fetch.end = entry.chunkCount
      bodyStart = 0
    case 416:
      try await switchGeneration(entry, response: response, length: nil)
      throw GenerationChanged()
    default:
      throw LoaderError.originStatus(url: url, status: response.status)
    }
    let limit = entry.info.acceptsRanges ? last + 1 : entry.info.length
    try await stream(response, from: bodyStart, into: fetch, entry, limit: limit)
  }

  /// Receives the body on its own task and stores whole chunks as they complete.
  private func stream(
    _ response: OriginResponse, from bodyStart: UInt64, into fetch: Fetch, _ entry: LoaderEntry,
    limit: UInt64
  ) async throws {
    let firstChunk = bodyStart == 0 && !entry.info.acceptsRanges ? 0 : fetch.next
    let assembler = ChunkAssembler(
      chunkSize: entry.chunkSize, length: entry.info.length, bodyStart: bodyStart,
      firstChunk: firstChunk, limit: limit)
    let body = response.body
    let receiver = Task.detached {
      do {
        for try await piece in body {
          if !assembler.append(piece) { break }
          await assembler.waitForRoom()
        }
        assembler.finish(error: nil)
      } catch {
        assembler.finish(error: error)
      }
    }
    defer {
      receiver.cancel()
      assembler.finish(error: nil)
    }
    while let batch = await assembler.nextBatch() {
      if let error = entry.storer.failure { throw storeError(error) }
      guard entries[entry.id] === entry else { throw GenerationChanged() }
      deliver(batch, entry)
      // A cancelled fetch has had its transfer stopped: keep storing what already arrived
      // (the body ends soon), so a player's cancel wastes as little as possible.
      if batch.firstIndex + chunksIn(batch, entry) >= fetch.end { break }
      // A body longer than a window (an origin that ignores Range) must not outrun the
      // store: hold it here (and, through the assembler, the origin client) meanwhile.
      if entry.storer.backlog > 2 * readAhead {
        await entry.storer.waitForBacklog(atMost: readAhead)
      }
    }
    stats.bytesFromOrigin += assembler.received
    unsavedCounters.bytesFromOrigin += assembler.received
    if fetch.next < fetch.end && !fetch.cancelled && !Task.isCancelled {
      if let error = assembler.error { throw mapTransport(error, entry) }
      throw LoaderError.originMisbehaved(
        url: entry.url.absoluteString,
        reason: "body ended at byte \(assembler.position) before the promised end")
    }
  }

  private func chunksIn(_ batch: ChunkAssembler.Batch, _ entry: LoaderEntry) -> Int {
    (batch.bytes.count + entry.chunkSize - 1) / entry.chunkSize
  }

  private func mapTransport(_ error: any Error, _ entry: LoaderEntry) -> any Error {
    if error is LoaderError { return error }
    return LoaderError.transport(url: entry.url.absoluteString, reason: "\(error)")
  }

  /// Hands a batch to its waiting readers (from memory) and to the entry's storer.
  private func deliver(_ batch: ChunkAssembler.Batch, _ entry: LoaderEntry) {
    let count = chunksIn(batch, entry)
    var offset = 0
    for index in batch.firstIndex..<(batch.firstIndex + count) {
      let size = min(entry.chunkSize, batch.bytes.count - offset)
      defer { offset += size }
      if entry.presence.contains(index) || entry.arrived[index] != nil { continue }
      let bytes = batch.bytes[offset..<(offset + size)]
      entry.arrived[index] = bytes
      for waiter in entry.waiters.removeValue(forKey: index) ?? [] {
        waiter.continuation.resume(returning: bytes)
      }
    }
    for fetch in entry.fetches
    where fetch.next >= batch.firstIndex && fetch.next < batch.firstIndex + count {
      fetch.next = batch.firstIndex + count
    }
    entry.storer.enqueue(batch)
  }

  /// Applies the entry's finished store calls to its state.
  func applyStores(id: AssetID, generation: UInt64) {
    guard let entry = entries[id], entry.generation == generation else { return }
    for outcome in entry.storer.takeCompleted() where entries[id] === entry {
      stored(outcome, entry)
    }
  }

  /// A store call finished: its chunks are recorded (readers now open them from the vault)
  /// or, if it failed, the entry fails.
  private func stored(_ outcome: ChunkStorer.Outcome, _ entry: LoaderEntry) {
    if let error = outcome.error {
      // Readers waiting on this entry get the error; the next read starts a new entry
      // (and storer), so a disk that has room again is used again. An asset evicted or
      // replaced meanwhile is no error: its readers start over.
      switch error {
      case VaultError.unknownAsset, VaultError.assetDamaged, is GenerationChanged:
        fail(entry, GenerationChanged())
      default:
        fail(entry, storeError(error))
      }
      entry.storer.close()
      return
    }
    stats.chunksStored += outcome.newlyStored
    stats.storeCommits += 1
    for index in outcome.chunks.joined() {
      entry.presence.insert(index)
      entry.arrived[index] = nil
    }
    if outcome.newlyStored > 0 { enforceLimitsSoon() }
  }

  private func storeError(_ error: any Error) -> any Error {
    switch error {
    case let error as VaultError: return LoaderError.vault(error.description)
    default: return error
    }
  }

  /// The origin has a new version: start a new generation (new key, empty), and fail every
  /// reader waiting on the old one (they decide whether they can restart).
  private func switchGeneration(_ entry: LoaderEntry, response: OriginResponse, length: UInt64?)
    async throws
  {
    // What the new version is: from this response when it says, else probe again.
    let info: ContentInfo
    if let newLength = length ?? response.header("content-length").flatMap({ UInt64($0) }),
      response.status != 416
    {
      info = ContentInfo(
        length: newLength, contentType: response.header("content-type"), acceptsRanges: true,
        validator: response.validator)
    } else {
      info = try await probe(entry.url)
    }
    // Record the new generation first, with no suspension point before the readers wake,
    // so a reader that restarts finds the new version, never the old record.
    _ = try mapVault {
      try vault.beginFill(
        identity: entry.identity, length: info.length, validator: info.validator,
        metadata: AssetMetadata(
          name: entry.name, contentType: info.contentType, originURL: entry.url.absoluteString))
    }
    entries[entry.id] = nil
    fail(entry, GenerationChanged())
    // The old generation's writer (and its lock) is released after its store in progress.
    entry.storer.close()
  }

  private func fail(_ entry: LoaderEntry, _ error: any Error) {
    for (_, list) in entry.waiters {
      for waiter in list { waiter.continuation.resume(throwing: error) }
    }
    entry.waiters = [:]
    entry.arrived = [:]
    for fetch in entry.fetches {
      fetch.cancelled = true
      fetch.stopTransfer?()
      fetch.task?.cancel()
    }
    entry.fetches = []
    if entries[entry.id] === entry { entries[entry.id] = nil }
  }

  private func finish(_ fetch: Fetch, _ entry: LoaderEntry, failing error: (any Error)?) {
    entry.fetches.removeAll { $0 === fetch }
    guard let error else {
      resumeOrphans(entry)
      return
    }
    // Wake readers waiting on chunks this fetch was to deliver.
    for index in fetch.next..<max(fetch.next, fetch.end) {
      for waiter in entry.waiters.removeValue(forKey: index) ?? [] {
        waiter.continuation.resume(throwing: error)
      }
    }
  }

  func mapVault<T>(_ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as VaultError {
      throw LoaderError.vault(error.description)
    }
  }
}
