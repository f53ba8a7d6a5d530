import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault key`: master key rotation, re-encryption, retirement, passphrases, status.
  struct Key: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "key",
      abstract: "Rotate the master key, re-encrypt assets, retire old keys, change passphrases.",
      discussion: """
        Key operations on one vault run one at a time (a lock on <vault>/KEYS.lock); a second \
        one is refused. See README.md "Key rotation" and docs/FORMAT.md §7.
        """,
      subcommands: [Rotate.self, Retire.self, Passwd.self, Status.self],
      defaultSubcommand: Status.self)
  }
}

extension VaultCommand.Key {
  /// `vault key status [--json]`.
  struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "status",
      abstract: "Show the active key, decrypt-only keys, assets per key, pending re-encryption.")

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
      try reportingErrors {
        let status = try options.openVault().keyStatus()
        if json {
          print(try JSONOutput.encode(status))
          return
        }
        for key in status.keys {
          let label = key.state == "active" ? "active" : "decrypt-only"
          print(
            label.padding(toLength: 14, withPad: " ", startingAt: 0) + key.keyID + "  "
              + "\(key.assets) asset keys  added \(JSONOutput.iso8601(key.createdAt))")
        }
        print("assets        \(status.assets)")
        if status.keys.contains(where: { $0.state != "active" }) {
          print("retire decrypt-only keys with `vault key retire` once every user has the new key")
        }
        if status.reencryptionPending > 0 {
          print(
            "re-encryption \(status.reencryptionPending) assets pending: "
              + "run `vault key rotate --reencrypt` to finish")
        } else {
          print("re-encryption none pending")
        }
        if status.openedWithKeyID != status.activeKeyID {
          print("note          opened with decrypt-only key \(status.openedWithKeyID)")
        }
      }
    }
  }

  /// `vault key retire [KEYID...]`.
  struct Retire: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "retire",
      abstract: "Retire decrypt-only keys: delete their rows and wrapped keys; they open nothing.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "Key ids to retire (default: every decrypt-only key).")
    var keyIDs: [String] = []

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let retired: [String]
        if keyIDs.isEmpty {
          retired = try vault.retireDecryptOnlyKeys()
        } else {
          for id in keyIDs { try vault.retireKey(id) }
          retired = keyIDs
        }
        if retired.isEmpty {
          print("no decrypt-only keys to retire")
        }
        for id in retired { print("retired key \(id): it no longer opens this vault") }
      }
    }
  }
}
