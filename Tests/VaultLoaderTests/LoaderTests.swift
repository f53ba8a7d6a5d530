import Foundation
import LoopbackOrigin
import Testing
import VaultCore
import VaultLoader

@Suite("Range loader against a loopback origin")
struct LoaderTests {
  let chunk = LoaderFixture.chunk

  @Test("a cold read fetches only what it needs, a warm read fetches nothing")
  func coldThenWarm() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    let source = media(40 * chunk + 123, seed: 1)
    f.origin.serve("/a.mp4", bytes: source, contentType: "video/mp4")
    let range = try await f.read("/a.mp4", from: 100_000, through: 200_000)
    #expect(range == Array(source[100_000...200_000]))
    // Probe (2 bytes) + the chunks that range touches, nothing else.
    let touched = 200_000 / chunk - 100_000 / chunk + 1
    #expect(f.origin.bodyBytesSent <= 2 + touched * chunk)
    f.origin.resetStatistics()
    let again = try await f.read("/a.mp4", from: 100_000, through: 200_000)
    #expect(again == range)
    #expect(f.origin.bodyBytesSent == 0)
    #expect(f.origin.requests.isEmpty)
    let info = try await f.loader.contentInfo(for: f.origin.url("/a.mp4"))
    #expect(info.length == UInt64(source.count))
    #expect(info.contentType == "video/mp4")
    #expect(info.uniformTypeIdentifier == "public.mpeg-4")
  }

  @Test("the whole resource, read twice: second pass from the vault only")
  func wholeTwice() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    let source = media(2_000_000, seed: 2)
    f.origin.serve("/b.bin", bytes: source)
    #expect(try await f.read("/b.bin") == source)
    #expect(f.origin.bodyBytesSent <= source.count + 2 + chunk)
    f.origin.resetStatistics()
    #expect(try await f.read("/b.bin") == source)
    #expect(f.origin.bodyBytesSent == 0)
    let id = try f.loader.assetID(for: f.origin.url("/b.bin"))
    #expect(try f.vault.info(id).complete)
    #expect(try f.vault.verify(id)[0].ok)
  }

  @Test("an open-ended read that stops early does not download the whole resource")
  func openEndedStopsEarly() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    // 32 MiB trickled at 4 MiB/s: stopping after 300 KB must leave most of it unsent
    // (socket buffers let the origin run a few MiB ahead of the reader).
    let block = media(1 << 20, seed: 3)
    var source: [UInt8] = []
    source.reserveCapacity(32 << 20)
    for _ in 0..<32 { source.append(contentsOf: block) }
    f.origin.serve("/big.bin", bytes: source, etag: "\"big\"")
    f.origin.setBehaviors([.trickle(bytesPerSecond: 4 << 20)], for: "/big.bin")
    var got: [UInt8] = []
    for try await piece in f.loader.read(f.origin.url("/big.bin"), from: 0) {
      got += piece
      if got.count >= 300_000 { break }
    }
    #expect(Array(got.prefix(300_000)) == Array(source.prefix(300_000)))
    // The origin goes quiet soon after the reader leaves (socket buffers drain first).
    var sent = f.origin.bodyBytesSent
    var quiet = false
    for _ in 0..<50 where !quiet {
      try await Task.sleep(nanoseconds: 200_000_000)
      let now = f.origin.bodyBytesSent
      quiet = now == sent
      sent = now
    }
    #expect(quiet, "the origin kept sending after the reader left")
    // However slow the reader was, the fetch never ran more than the read-ahead window
    // (8 MiB) past it, plus what socket buffers hold.
    #expect(sent < source.count / 2, "\(sent) bytes sent for a 300 KB read")
  }

  @Test("16 concurrent readers of one cold range share one origin request per chunk run")
  func singleFlight() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    let source = media(30 * chunk, seed: 4)
    f.origin.serve("/s.bin", bytes: source)
    _ = try await f.loader.contentInfo(for: f.origin.url("/s.bin"))  // the probe
    f.origin.resetStatistics()
    f.origin.setBehaviors([.trickle(bytesPerSecond: 8 << 20)], for: "/s.bin")
    let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
      for _ in 0..<16 {
        group.addTask {
          try await f.read("/s.bin", from: UInt64(5 * chunk), through: UInt64(25 * chunk - 1))
        }
      }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    for r in results { #expect(r == Array(source[(5 * chunk)..<(25 * chunk)])) }
    #expect(f.origin.requests.count == 1, "\(f.origin.requests.map(\.range))")
    #expect(f.origin.bodyBytesSent == 20 * chunk)
  }

  @Test("offline: stored bytes are served, missing ones are a typed error naming the range")
  func offline() async throws {
    let online = try LoaderFixture()
    defer { online.cleanup() }
    let source = media(10 * chunk, seed: 5)
    online.origin.serve("/o.bin", bytes: source)
    _ = try await online.read("/o.bin", from: 0, through: UInt64(3 * chunk - 1))
    let offline = RangeLoader(vault: online.vault, origin: HTTPOrigin(), offline: true)
    var got: [UInt8] = []
    for try await piece in offline.read(
      online.origin.url("/o.bin"), from: 0, through: UInt64(3 * chunk - 1))
    {
      got += piece
    }
    #expect(got == Array(source[0..<(3 * chunk)]))
    await #expect(
      throws: LoaderError.offlineMissing(
        url: online.origin.url("/o.bin").absoluteString, start: UInt64(3 * chunk),
        end: UInt64(4 * chunk - 1))
    ) {
      for try await _ in offline.read(online.origin.url("/o.bin"), from: UInt64(3 * chunk)) {}
    }
  }
}

@Suite("Cache keys through the loader")
struct LoaderCacheKeyTests {
  @Test("two hosts of one alias group and three signed tokens: one asset, fetched once")
  func aliasesAndTokens() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    try f.vault.updateCacheKeyRules { try $0.addAliases(["127.0.0.1", "localhost"]) }
    let source = media(5 * LoaderFixture.chunk, seed: 40)
    f.origin.serve("/song.mp3", bytes: source, contentType: "audio/mpeg")
    let port = f.origin.port
    let urls = [
      "http://127.0.0.1:\(port)/song.mp3?X-Amz-Signature=aaa&X-Amz-Expires=60",
      "http://localhost:\(port)/song.mp3?token=bbb",
      "http://LOCALHOST:\(port)/song.mp3?Expires=1&Signature=ccc&Key-Pair-Id=k",
    ].compactMap(URL.init(string:))
    #expect(urls.count == 3)
    var ids: Set<AssetID> = []
    for url in urls {
      var got: [UInt8] = []
      for try await piece in f.loader.read(url) { got += piece }
      #expect(got == source)
      ids.insert(try f.loader.assetID(for: url))
    }
    #expect(ids.count == 1)
    #expect(try f.vault.list().count == 1)
    #expect(f.origin.bodyBytesSent <= source.count + 2)
    // A content id overrides the URL: a different asset.
    let other = try f.loader.assetID(for: urls[0], contentID: "song-42")
    #expect(!ids.contains(other))
    // The on-disk name is neither the URL nor its host.
    let hex = ids.first?.hex ?? ""
    #expect(!hex.contains("127") || hex.count == 64)
    let files = try FileManager.default.subpathsOfDirectory(atPath: f.vault.directory)
    #expect(!files.contains { $0.contains("song") || $0.contains("localhost") })
  }
}

@Suite("Single-flight hand-offs")
struct HandOffTests {
  @Test(
    "a reader whose fetch was cut short by another's seek still gets its bytes when that seeker leaves"
  )
  func seekThenLeave() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    let chunk = LoaderFixture.chunk
    let source = media(64 * chunk, seed: 50)
    f.origin.serve("/h.bin", bytes: source, etag: "\"h\"")
    f.origin.setBehaviors([.trickle(bytesPerSecond: 2 << 20)], for: "/h.bin")
    _ = try await f.loader.contentInfo(for: f.origin.url("/h.bin"))
    // Reader A reads everything from chunk 0; reader B starts inside A's fetch, far ahead,
    // which shortens A's fetch, then B leaves after one piece.
    let a = Task { try await f.read("/h.bin", from: 0) }
    try await Task.sleep(nanoseconds: 100_000_000)
    for try await _ in f.loader.read(f.origin.url("/h.bin"), from: UInt64(40 * chunk)) { break }
    let got = try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
      group.addTask { try await a.value }
      group.addTask {
        try await Task.sleep(nanoseconds: 30_000_000_000)
        return nil
      }
      let first = try await group.next() ?? nil
      group.cancelAll()
      return first
    }
    #expect(got == source, "reader A did not finish (hung or wrong bytes)")
  }
}

@Suite("Read-ahead window")
struct ReadAheadTests {
  @Test("a paused reader of an open-ended range does not make the loader download everything")
  func pausedReader() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    var source: [UInt8] = []
    let block = media(1 << 20, seed: 70)
    for _ in 0..<40 { source.append(contentsOf: block) }
    f.origin.serve("/p.bin", bytes: source, etag: "\"p\"")
    var iterator = f.loader.read(f.origin.url("/p.bin")).makeAsyncIterator()
    var got: [UInt8] = []
    while got.count < 100_000, let piece = try await iterator.next() { got += piece }
    // The reader pauses (holds its iterator without pulling). The fetch stops at the window.
    var sent = f.origin.bodyBytesSent
    for _ in 0..<50 {
      try await Task.sleep(nanoseconds: 200_000_000)
      if f.origin.bodyBytesSent == sent { break }
      sent = f.origin.bodyBytesSent
    }
    #expect(sent < 20 << 20, "\(sent) bytes downloaded for a paused reader")
    // Resuming continues correctly past the window (a new fetch).
    while got.count < 12 << 20, let piece = try await iterator.next() { got += piece }
    #expect(Array(got.prefix(12 << 20)) == Array(source.prefix(12 << 20)))
  }
}
