import Foundation
import GRDB
import Testing

@testable import VaultCore

/// A clock a test sets by hand.
final class ManualClock: Sendable {
  private let time: Locked<Date>
  init(_ start: Date) { time = Locked(start) }
  var now: Date { time.withLock { $0 } }
  func set(_ date: Date) { time.withLock { $0 = date } }
  func advance(_ seconds: TimeInterval) { time.withLock { $0 = $0.addingTimeInterval(seconds) } }
  var vaultClock: VaultClock { VaultClock { self.now } }
}

/// A vault in a temp dir (demo key, 16 KiB chunks) whose lease time is a ``ManualClock``.
struct LeaseVault {
  let directory: TempDirectory
  let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
  let vault: Vault
  let bytes = patternBytes(count: 100_000, seed: 21)

  init() throws {
    directory = try TempDirectory()
    vault = try Vault.create(
      at: directory.file("vault"), masterKey: try demoKey(), chunkSize: 16_384,
      clock: clock.vaultClock)
  }

  var path: String { directory.file("vault") }

  @discardableResult
  func importBytes(_ name: String, lease: Lease?) throws -> AssetID {
    let source = directory.file("src-\(name)")
    try Data(bytes).write(to: URL(fileURLWithPath: source))
    return try #require(
      AssetID(hex: try vault.importFile(at: source, name: name, lease: lease).id))
  }

  /// Opens the index file directly, as someone with the directory but not the key.
  func rawIndex() throws -> DatabaseQueue {
    try DatabaseQueue(path: path + "/index.sqlite")
  }
}

func denial(of body: () throws -> Void) -> LeaseDenial? {
  do {
    try body()
    return nil
  } catch VaultError.leaseExpired(_, let denial) {
    return denial
  } catch {
    Issue.record("unexpected error \(error)")
    return nil
  }
}

@Suite("Leases (DRM-lite)")
struct LeaseTests {
  @Test("expiry: readable just before notAfter, refused and shredded at it")
  func expiryBoundary() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let start = t.clock.now
    let id = try t.importBytes("film", lease: Lease(notAfter: start.addingTimeInterval(3600)))
    t.clock.set(start.addingTimeInterval(3599.5))
    try t.vault.authorizeRead(id, from: 0)
    #expect(try t.vault.reader(for: id).read(offset: 0, count: 100) == Array(t.bytes[0..<100]))
    t.clock.set(start.addingTimeInterval(3600))
    #expect(
      denial { try t.vault.authorizeRead(id, from: 50_000) }
        == .expired(at: start.addingTimeInterval(3600)))
    // Lazily shredded: the key record is gone, so is the file.
    #expect(throws: VaultError.unknownAsset(id.short)) { try t.vault.info(id) }
    #expect(!FileManager.default.fileExists(atPath: t.vault.assetPath(id, generation: 1)))
  }

  @Test("first-play window: starts at the first read, closes maxAge later")
  func firstPlayWindow() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let id = try t.importBytes("rental", lease: Lease(maxAgeAfterFirstPlay: 48 * 3600))
    // Not played for a month: the window has not started.
    t.clock.advance(30 * 86_400)
    #expect(try t.vault.leaseState(of: id)?.firstPlayAt == nil)
    let first = t.clock.now
    try t.vault.authorizeRead(id, from: 0)
    #expect(try t.vault.leaseState(of: id)?.firstPlayAt == first)
    t.clock.advance(48 * 3600 - 1)
    try t.vault.authorizeRead(id, from: 20_000)
    t.clock.advance(1)
    #expect(
      denial { try t.vault.authorizeRead(id, from: 20_000) }
        == .playWindowClosed(at: first.addingTimeInterval(48 * 3600)))
    #expect(try t.vault.list().isEmpty)
  }

  @Test("a wound-back clock does not move lease time back, nor the first play before the lease")
  func woundBackClock() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let set = t.clock.now
    let id = try t.importBytes("w", lease: Lease(maxAgeAfterFirstPlay: 3600))
    t.clock.advance(-86_400)  // the user winds the clock back a day before playing
    try t.vault.authorizeRead(id, from: 0)
    #expect(try t.vault.leaseState(of: id)?.firstPlayAt == set)
    t.clock.set(set.addingTimeInterval(3600))
    #expect(denial { try t.vault.authorizeRead(id, from: 0) } != nil)
  }

  @Test("play counts: starts in the first chunk count, within 60 s they are one play")
  func playCounts() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let id = try t.importBytes("song", lease: Lease(maxPlays: 2))
    try t.vault.authorizeRead(id, from: 0)  // play 1
    t.clock.advance(30)
    try t.vault.authorizeRead(id, from: 0)  // the same play (probe, then the real read)
    try t.vault.authorizeRead(id, from: 40_000)  // a seek: not a play
    #expect(try t.vault.leaseState(of: id)?.plays == 1)
    t.clock.advance(61)
    try t.vault.authorizeRead(id, from: 100)  // play 2
    #expect(try t.vault.leaseState(of: id)?.plays == 2)
    t.clock.advance(61)
    #expect(denial { try t.vault.authorizeRead(id, from: 0) } == .playsExhausted(limit: 2))
    // The last play may still seek; after its grace period the asset is shredded.
    try t.vault.authorizeRead(id, from: 40_000)
    t.clock.advance(VaultFormat.lastPlayGrace)
    #expect(denial { try t.vault.authorizeRead(id, from: 40_000) } == .playsExhausted(limit: 2))
    #expect(throws: VaultError.unknownAsset(id.short)) { try t.vault.info(id) }
  }

  @Test("export counts as a play and is refused once the plays are used")
  func exportIsAPlay() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let id = try t.importBytes("x", lease: Lease(maxPlays: 1))
    try t.vault.export(id, to: t.directory.file("out"))
    t.clock.advance(120)
    #expect(
      denial { try t.vault.export(id, to: t.directory.file("out2")) } == .playsExhausted(limit: 1))
  }

  @Test("a lease edited, deleted or moved on disk without the key is refused")
  func tamperedLease() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let a = try t.importBytes("a", lease: Lease(maxPlays: 1))
    let b = try t.importBytes("b", lease: Lease(notAfter: t.clock.now.addingTimeInterval(60)))
    let c = try t.importBytes("c", lease: Lease(maxPlays: 3))
    try t.importBytes("free", lease: nil)
    let db = try t.rawIndex()
    try db.write { db in
      try db.execute(
        sql: "UPDATE lease SET maxPlays = 1000 WHERE assetID = ?", arguments: [Data(a.bytes)])
      try db.execute(
        sql: "UPDATE lease SET notAfter = notAfter + 1e9 WHERE assetID = ?",
        arguments: [Data(b.bytes)])
      try db.execute(sql: "DELETE FROM lease WHERE assetID = ?", arguments: [Data(c.bytes)])
    }
    // A fresh open, as after the edit on disk.
    let vault = try Vault.open(at: t.path, masterKey: try demoKey(), clock: t.clock.vaultClock)
    for id in [a, b, c] {
      #expect(denial { try vault.authorizeRead(id, from: 0) } == .tampered)
    }
    try vault.authorizeRead(try vault.resolve("free"), from: 0)
    let statuses = try vault.list().map { $0.lease?.status }
    #expect(statuses.filter { $0 == "tampered" }.count == 3)
    // A valid lease row copied onto another asset does not open either.
    let d = try t.importBytes("d", lease: Lease(maxPlays: 5))
    try db.write { db in
      try db.execute(
        sql: "DELETE FROM lease WHERE assetID = ?", arguments: [Data(a.bytes)])
      try db.execute(
        sql: "UPDATE lease SET assetID = ? WHERE assetID = ?",
        arguments: [Data(a.bytes), Data(d.bytes)])
    }
    #expect(denial { try vault.authorizeRead(a, from: 0) } == .tampered)
    // Tampered leases are refused, not shredded.
    #expect(try vault.shredExpired().tampered == 2)  // rows that fail their MAC: a (moved), b
    #expect(try vault.list().count == 5)
  }

  @Test("setting, extending and clearing a lease; counters survive an extension")
  func editLease() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let id = try t.importBytes("e", lease: nil)
    try t.vault.setLease(Lease(maxPlays: 1), on: id)
    try t.vault.authorizeRead(id, from: 0)
    t.clock.advance(61)
    #expect(denial { try t.vault.authorizeRead(id, from: 0) } == .playsExhausted(limit: 1))
    try t.vault.setLease(Lease(maxPlays: 2), on: id)
    #expect(try t.vault.leaseState(of: id)?.plays == 1)
    try t.vault.authorizeRead(id, from: 0)
    try t.vault.clearLease(on: id)
    #expect(try t.vault.leaseState(of: id) == nil)
    t.clock.advance(61)
    try t.vault.authorizeRead(id, from: 0)
    // Clearing is recorded in the sealed metadata too: no lease row is expected.
    let vault = try Vault.open(at: t.path, masterKey: try demoKey())
    #expect(try vault.leaseState(of: id) == nil)
  }

  @Test("shred --expired removes exactly the expired assets")
  func shredExpired() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let now = t.clock.now
    let old = try t.importBytes("old", lease: Lease(notAfter: now.addingTimeInterval(10)))
    try t.importBytes("new", lease: Lease(notAfter: now.addingTimeInterval(1000)))
    try t.importBytes("free", lease: nil)
    t.clock.advance(10)
    let (shredded, tampered) = try t.vault.shredExpired()
    #expect(shredded.map(\.0) == [old] && tampered == 0)
    #expect(try t.vault.list().map(\.name).sorted() == ["free", "new"])
  }

  @Test("a lease row of an earlier asset under the same name never applies to a new one")
  func staleLeaseRow() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let id = try t.importBytes("same", lease: Lease(maxPlays: 1))
    let db = try t.rawIndex()
    let saved = try db.read { try Row.fetchOne($0, sql: "SELECT * FROM lease") }
    try t.vault.remove(id)
    try t.importBytes("same", lease: nil)
    // Put the old row back: it belongs to an asset created at another time.
    try db.write { db in
      let row = try #require(saved)
      try db.execute(
        sql: "INSERT INTO lease (" + row.columnNames.joined(separator: ",") + ") VALUES ("
          + Array(repeating: "?", count: row.count).joined(separator: ",") + ")",
        arguments: StatementArguments(row.databaseValues))
    }
    #expect(denial { try t.vault.authorizeRead(id, from: 0) } == .tampered)
  }

  @Test("a lease survives re-encryption and a new origin generation, and stays protected")
  func leaseSurvivesNewGenerations() throws {
    let t = try LeaseVault()
    defer { t.directory.cleanup() }
    let id = try t.importBytes("r", lease: Lease(maxPlays: 2))
    try t.vault.authorizeRead(id, from: 0)
    _ = try t.vault.reencrypt(assets: [id])
    #expect(try t.vault.info(id).generation == 2)
    #expect(try t.vault.leaseState(of: id)?.plays == 1)
    // A fetched asset whose origin changes moves to a new generation (new data key).
    let identity = AssetIdentity.contentID("fetched")
    _ = try t.vault.beginFill(
      identity: identity, length: 1000, validator: "\"v1\"",
      metadata: AssetMetadata(name: "fetched"))
    let fetched = try t.vault.assetID(for: identity)
    try t.vault.setLease(Lease(maxPlays: 1), on: fetched)
    _ = try t.vault.beginFill(
      identity: identity, length: 2000, validator: "\"v2\"",
      metadata: AssetMetadata(name: "fetched"))
    #expect(try t.vault.info(fetched).generation == 2)
    #expect(try t.vault.leaseState(of: fetched)?.lease.maxPlays == 1)
    // Still protected: deleting the rows is detected on both.
    try t.rawIndex().write { try $0.execute(sql: "DELETE FROM lease") }
    let vault = try Vault.open(at: t.path, masterKey: try demoKey())
    #expect(denial { try vault.authorizeRead(id, from: 0) } == .tampered)
    #expect(denial { try vault.authorizeRead(fetched, from: 0) } == .tampered)
  }

  @Test("the committed v1 fixture opens and its assets have no lease")
  func fixtureHasNoLeases() throws {
    let dir = try TempDirectory()
    defer { dir.cleanup() }
    let copy = dir.file("vault")
    try FileManager.default.copyItem(atPath: fixturesDirectory + "/vault-v1", toPath: copy)
    let vault = try Vault.open(at: copy, masterKey: try demoKey())
    for asset in try vault.list() {
      #expect(asset.lease == nil)
      try vault.authorizeRead(try #require(AssetID(hex: asset.id)), from: 0)
    }
  }
}
