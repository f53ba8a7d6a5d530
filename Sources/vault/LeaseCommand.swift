import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault lease`: put a lease on an asset, change it, clear it, or show it.
  struct LeaseAsset: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "lease",
      abstract: "Set, show or clear an asset's lease (expiry, first-play window, play count).",
      discussion: """
        With no lease option, shows the lease. An expired asset is shredded the next time it \
        is read, or by `vault shred --expired`. See docs/DRM-LITE.md.
        """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var lease: LeaseOptions

    @Argument(help: "Asset name, id, or unique id prefix.")
    var asset: String

    @Flag(help: "Remove the lease: the asset plays without limits again.")
    var clear = false

    @Flag(help: "Start the first-play time and the play count afresh.")
    var resetCounters = false

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
      if clear && lease.lease(now: Date()) != nil {
        throw ValidationError("--clear takes no lease options")
      }
    }

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let id = try vault.resolve(asset)
        if clear {
          try vault.clearLease(on: id)
        } else if let newLease = lease.lease(now: Date()) {
          try vault.setLease(newLease, on: id, resetCounters: resetCounters)
        }
        let info = try vault.info(id)
        if json {
          print(try JSONOutput.encode(info.lease))
        } else {
          print(
            "\(id.short) \(info.name): \(info.lease == nil ? "no lease" : LeaseText.describe(info.lease))"
          )
        }
      }
    }
  }

  /// `vault shred`: crypto-shred expired assets (or named ones).
  struct Shred: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "shred",
      abstract:
        "Destroy the keys, then the files, of assets whose lease has expired (or of ASSET...).")

    @OptionGroup var options: VaultOptions

    @Flag(help: "Shred every asset whose lease no longer allows any read.")
    var expired = false

    @Argument(help: "Assets to shred (name, id, or unique id prefix), like `vault rm`.")
    var assets: [String] = []

    func validate() throws {
      guard expired != !assets.isEmpty else {
        throw ValidationError("give --expired or one or more assets")
      }
    }

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        if expired {
          let (shredded, tampered) = try vault.shredExpired()
          for (id, denial) in shredded { print("shredded \(id.short): \(denial)") }
          print("shredded \(shredded.count) expired asset\(shredded.count == 1 ? "" : "s")")
          if tampered > 0 {
            throw CLIError(
              "\(tampered) lease\(tampered == 1 ? "" : "s") failed authentication (left alone)")
          }
          return
        }
        let ids = try assets.map { try vault.resolve($0) }
        for id in ids {
          try vault.shred(id)
          print("shredded \(id.short)")
        }
      }
    }
  }
}
