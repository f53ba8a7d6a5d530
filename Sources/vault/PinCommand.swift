import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault pin`: keep assets out of eviction (offline downloads).
  struct Pin: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "pin", abstract: "Pin assets: limits and `vault prune` never evict them.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "Asset names, ids or id prefixes.")
    var assets: [String]

    func run() throws {
      try reportingErrors { try setPinned(true, assets, options) }
    }
  }

  /// `vault unpin`: let assets be evicted again.
  struct Unpin: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "unpin", abstract: "Unpin assets: eviction may remove them again.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "Asset names, ids or id prefixes.")
    var assets: [String]

    func run() throws {
      try reportingErrors { try setPinned(false, assets, options) }
    }
  }
}

/// Resolves every reference first, so one unknown name changes nothing.
private func setPinned(_ pinned: Bool, _ references: [String], _ options: VaultOptions) throws {
  guard !references.isEmpty else { throw CLIError("name at least one asset") }
  let vault = try options.openVault()
  let ids = try references.map { try vault.resolve($0) }
  for id in ids { try vault.setPinned(id, pinned) }
  for (reference, id) in zip(references, ids) {
    print("\(pinned ? "pinned" : "unpinned") \(id.short) \(reference)")
  }
}
