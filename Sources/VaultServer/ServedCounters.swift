import Foundation
import VaultCore

/// What the server answered straight from the vault (fully stored ranges, `assets/`),
/// added to the vault's usage counters (`vault stats`) at most every 2 s and at shutdown.
/// Ranges that go through the range loader are counted by the loader.
final class ServedCounters: Sendable {
  private struct Pending {
    var pieces = 0
    var bytes: UInt64 = 0
    var savedAt = Date()
  }

  private let vault: Vault
  private let pending = Locked(Pending())

  init(vault: Vault) { self.vault = vault }

  /// Counts `bytes` served from stored chunks (`pieces` chunks touched). Returns whether
  /// the counts are due to be saved (call ``save()`` off the event loop).
  func add(bytes: Int, pieces: Int) -> Bool {
    pending.withLock {
      $0.bytes += UInt64(bytes)
      $0.pieces += pieces
      return Date().timeIntervalSince($0.savedAt) > 2
    }
  }

  /// Adds what was counted since the last save to the vault's counters (one transaction).
  func save() {
    let taken = pending.withLock { value -> Pending in
      let taken = value
      value = Pending()
      return taken
    }
    guard taken.bytes > 0 else { return }
    try? vault.addCounters(hits: taken.pieces, bytesFromCache: taken.bytes)
  }
}
