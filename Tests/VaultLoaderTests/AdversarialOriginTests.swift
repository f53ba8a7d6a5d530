import Foundation
import LoopbackOrigin
import OriginClient
import Testing
import VaultCore
import VaultLoader

/// Each misbehaving origin gives correct bytes or a clear typed error, and never leaves
/// wrong bytes in the vault (verify stays clean, stored chunks match the source).
@Suite("Adversarial origins")
struct AdversarialOriginTests {
  let chunk = LoaderFixture.chunk

  /// Every stored chunk equals the source; verify is clean.
  func expectVaultHonest(_ f: LoaderFixture, _ path: String, _ source: [UInt8]) throws {
    let id = try f.loader.assetID(for: f.origin.url(path))
    guard let info = try? f.vault.info(id) else { return }
    let reader = try f.vault.reader(for: id)
    for index in reader.presence.indices {
      let start = index * chunk
      let count = min(chunk, source.count - start)
      #expect(
        try reader.read(offset: UInt64(start), count: count)
          == Array(source[start..<(start + count)]))
    }
    #expect(try f.vault.verify(id)[0].ok)
    _ = info
  }

  @Test(
    "an origin without Range support: correct bytes, and every chunk on the way is kept",
    arguments: OriginKind.allCases)
  func ignoresRange(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let source = media(12 * chunk + 77, seed: 10)
    f.origin.serve("/n.bin", bytes: source)
    f.origin.setBehaviors([.ignoreRange], for: "/n.bin")
    #expect(
      try await f.read("/n.bin", from: UInt64(5 * chunk + 3), through: UInt64(8 * chunk))
        == Array(source[(5 * chunk + 3)...(8 * chunk)]))
    let info = try await f.loader.contentInfo(for: f.origin.url("/n.bin"))
    #expect(info.acceptsRanges == false)
    let id = try f.loader.assetID(for: f.origin.url("/n.bin"))
    #expect(try f.vault.info(id).chunksStored >= 9)  // chunks 0...8 stored on the way
    try expectVaultHonest(f, "/n.bin", source)
  }

  @Test("a wrong Content-Range is refused and nothing is stored", arguments: OriginKind.allCases)
  func wrongContentRange(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let source = media(6 * chunk, seed: 11)
    f.origin.serve("/w.bin", bytes: source)
    _ = try await f.loader.contentInfo(for: f.origin.url("/w.bin"))
    f.origin.setBehaviors([.wrongContentRange], for: "/w.bin")
    await #expect(throws: LoaderError.self) {
      _ = try await f.read("/w.bin", from: UInt64(2 * chunk))
    }
    try expectVaultHonest(f, "/w.bin", source)
    #expect(try f.vault.info(try f.loader.assetID(for: f.origin.url("/w.bin"))).chunksStored == 0)
  }

  @Test("a missing Content-Range on 206 is refused", arguments: OriginKind.allCases)
  func missingContentRange(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let source = media(6 * chunk, seed: 12)
    f.origin.serve("/m.bin", bytes: source)
    _ = try await f.loader.contentInfo(for: f.origin.url("/m.bin"))
    f.origin.setBehaviors([.missingContentRange], for: "/m.bin")
    await #expect(throws: LoaderError.self) { _ = try await f.read("/m.bin") }
    try expectVaultHonest(f, "/m.bin", source)
  }

  @Test(
    "a body shorter than promised: complete chunks kept, the rest refetched, bytes correct",
    arguments: OriginKind.allCases)
  func droppedConnection(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let source = media(20 * chunk, seed: 13)
    f.origin.serve("/d.bin", bytes: source)
    _ = try await f.loader.contentInfo(for: f.origin.url("/d.bin"))
    f.origin.setBehaviors([.dropAfter(bytes: 5 * chunk + 1000)], for: "/d.bin")
    // Every response drops after 5 chunks + a bit; the loader keeps the whole chunks and
    // resumes from the first missing one until done.
    #expect(try await f.read("/d.bin") == source)
    try expectVaultHonest(f, "/d.bin", source)
  }

  @Test(
    "the ETag changes between requests: a new generation, one version, never a mix",
    arguments: OriginKind.allCases)
  func etagChanges(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let v1 = media(10 * chunk, seed: 14)
    f.origin.serve("/e.bin", bytes: v1, contentType: "video/mp4", etag: "\"v1\"")
    #expect(
      try await f.read("/e.bin", from: 0, through: UInt64(3 * chunk - 1))
        == Array(v1[0..<(3 * chunk)]))
    let id = try f.loader.assetID(for: f.origin.url("/e.bin"))
    #expect(try f.vault.info(id).generation == 1)
    let v2 = media(10 * chunk, seed: 15)
    f.origin.replaceBody("/e.bin", bytes: v2, etag: "\"v2\"")
    // Bytes beyond what is stored: the If-Range request gets a 200 with the new version.
    let fresh = RangeLoader(vault: f.vault, origin: client.make(idleTimeout: 5))
    var got: [UInt8] = []
    for try await piece in fresh.read(f.origin.url("/e.bin"), from: UInt64(5 * chunk)) {
      got += piece
    }
    #expect(got == Array(v2[(5 * chunk)...]), "must be the new version only")
    #expect(f.origin.requests.contains { $0.ifRange == "\"v1\"" })
    #expect(try f.vault.info(id).generation >= 2)
    let reader = try f.vault.reader(for: id)
    for index in reader.presence.indices {
      let bytes = try reader.read(offset: UInt64(index * chunk), count: chunk)
      #expect(
        bytes == Array(v2[(index * chunk)..<((index + 1) * chunk)]), "chunk \(index) is not v2")
    }
  }

  @Test("500 then success: retried with backoff", arguments: OriginKind.allCases)
  func retryAfter500(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let source = media(4 * chunk, seed: 16)
    f.origin.serve("/r.bin", bytes: source)
    _ = try await f.loader.contentInfo(for: f.origin.url("/r.bin"))
    f.origin.setBehaviors([.failFirst(count: 2, status: 500)], for: "/r.bin")
    #expect(try await f.read("/r.bin") == source)
  }

  @Test("404 and 416 are typed errors; nothing stored", arguments: OriginKind.allCases)
  func statuses(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    await #expect(
      throws: LoaderError.originStatus(url: f.origin.url("/missing").absoluteString, status: 404)
    ) {
      _ = try await f.read("/missing")
    }
    f.origin.serve("/x.bin", bytes: media(100, seed: 1))
    f.origin.setBehaviors([.always(status: 416)], for: "/x.bin")
    await #expect(throws: LoaderError.self) { _ = try await f.read("/x.bin") }
  }

  @Test("a redirect chain is followed; a loop is a typed error", arguments: OriginKind.allCases)
  func redirects(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let source = media(3 * chunk, seed: 17)
    f.origin.serve("/real.bin", bytes: source)
    f.origin.serve("/hop.bin", bytes: [])
    f.origin.setBehaviors([.redirect(to: "/real.bin", status: 302)], for: "/hop.bin")
    #expect(try await f.read("/hop.bin") == source)
    f.origin.serve("/loop.bin", bytes: [])
    f.origin.setBehaviors([.redirectLoop], for: "/loop.bin")
    await #expect(throws: LoaderError.self) { _ = try await f.read("/loop.bin") }
  }

  @Test("a stalled origin times out with a typed error", arguments: OriginKind.allCases)
  func stalled(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    f.origin.serve("/t.bin", bytes: media(4 * chunk, seed: 18))
    f.origin.setBehaviors([.stallAfterHeaders(seconds: 120)], for: "/t.bin")
    let loader = RangeLoader(vault: f.vault, origin: client.make(idleTimeout: 1))
    let started = Date()
    await #expect(throws: LoaderError.self) {
      for try await _ in loader.read(f.origin.url("/t.bin")) {}
    }
    // A typed error long before the origin's 120 s stall ends (4 attempts of 1 s idle each,
    // plus backoff; generous for a loaded CI machine).
    #expect(Date().timeIntervalSince(started) < 60)
  }

  @Test(
    "lower-case header names and a missing Content-Type still work", arguments: OriginKind.allCases)
  func headerQuirks(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let source = media(5 * chunk + 9, seed: 19)
    f.origin.serve("/q.bin", bytes: source)
    f.origin.setBehaviors([.lowercaseHeaderNames, .noContentType], for: "/q.bin")
    #expect(
      try await f.read("/q.bin", from: 1000, through: UInt64(4 * chunk))
        == Array(source[1000...(4 * chunk)]))
    #expect(try await f.loader.contentInfo(for: f.origin.url("/q.bin")).contentType == nil)
  }
}

@Suite("Origin version changes on a live loader")
struct LiveVersionChangeTests {
  @Test(
    "the same loader switches to the new version; old chunks are gone; reads never mix",
    arguments: OriginKind.allCases)
  func sameLoader(_ client: OriginKind) async throws {
    let f = try LoaderFixture(client: client)
    defer { f.cleanup() }
    let chunk = LoaderFixture.chunk
    let v1 = media(12 * chunk, seed: 60)
    f.origin.serve("/live.bin", bytes: v1, etag: "\"one\"")
    #expect(
      try await f.read("/live.bin", from: 0, through: UInt64(3 * chunk - 1))
        == Array(v1[0..<(3 * chunk)]))
    let v2 = media(12 * chunk, seed: 61)
    f.origin.replaceBody("/live.bin", bytes: v2, etag: "\"two\"")
    // Several readers at once past the stored part: each gets v2 only.
    let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
      for _ in 0..<4 { group.addTask { try await f.read("/live.bin", from: UInt64(5 * chunk)) } }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    for r in results { #expect(r == Array(v2[(5 * chunk)...])) }
    // The start, stored under v1, was dropped with its generation: it reads as v2 now.
    #expect(
      try await f.read("/live.bin", from: 0, through: UInt64(3 * chunk - 1))
        == Array(v2[0..<(3 * chunk)]))
    let id = try f.loader.assetID(for: f.origin.url("/live.bin"))
    #expect(try f.vault.info(id).generation == 2, "one switch, not a cascade")
    #expect(try f.vault.verify(id)[0].ok)
  }
}
