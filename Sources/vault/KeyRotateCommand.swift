import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand.Key {
  /// `vault key rotate [--new-key-file F] [--retire-old]` and
  /// `vault key rotate --reencrypt [ASSET...]`.
  struct Rotate: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "rotate",
      abstract: "Rotate the master key (rewraps keys only), or re-encrypt assets (--reencrypt).",
      discussion: """
        Without --new-key-file the new key replaces the key file: it is written to KEY.new, \
        the vault rewraps every data key under it in one transaction, KEY is kept as \
        KEY.old-<old id> and KEY.new is renamed over KEY. The old key stays decrypt-only \
        until `vault key retire` (or --retire-old). With --new-key-file the new key is read \
        from that file (created with a random key if missing) and KEY is left as it is. \
        Rerun the command after a crash or Ctrl-C: it finishes or redoes what was cut short.
        """)

    @OptionGroup var options: VaultOptions

    @Option(help: "Take the new key from this file (a new random key is written there if missing).")
    var newKeyFile: String?

    @Flag(help: "Retire the old key at once: it opens nothing afterwards.")
    var retireOld = false

    @Flag(help: "Re-encrypt assets under new data keys instead (all, or the ones named).")
    var reencrypt = false

    @Argument(
      help: "With --reencrypt: asset names or ids (default: continue or start a job for all).")
    var assets: [String] = []

    func validate() throws {
      if reencrypt && (newKeyFile != nil || retireOld) {
        throw ValidationError("--reencrypt cannot be combined with --new-key-file or --retire-old")
      }
      if !reencrypt && !assets.isEmpty {
        throw ValidationError("asset arguments need --reencrypt")
      }
    }

    func run() throws {
      try reportingErrors {
        if reencrypt {
          try runReencryption()
        } else {
          try runRotation()
        }
      }
    }

    private func runReencryption() throws {
      let vault = try options.openVault()
      let ids = try assets.isEmpty ? nil : assets.map { try vault.resolve($0) }
      let progress = ProgressLine("re-encrypting")
      let start = Date()
      let summary = try vault.reencrypt(assets: ids, progress: progress.update)
      progress.finish()
      let seconds = Date().timeIntervalSince(start)
      var line =
        "re-encrypted \(summary.assets) assets (\(summary.chunks) chunks, "
        + "\(formatBytes(summary.bytes))) in \(String(format: "%.2f", seconds)) s"
      if summary.orphanFilesRemoved > 0 {
        line += "; removed \(summary.orphanFilesRemoved) leftover files"
      }
      print(line)
    }

    private func runRotation() throws {
      let directory = try options.vaultDirectory
      let oldKey = try options.masterKey()
      let staged = KeyFileSwap(keyPath: try options.keyFilePath).stagedPath
      let vault: Vault
      do {
        vault = try Vault.open(at: directory, masterKey: oldKey)
      } catch VaultError.wrongKey(let expected, let actual)
        where newKeyFile == nil && FileManager.default.fileExists(atPath: staged)
      {
        // A run with --retire-old cut short before its key file swap: the old key opens
        // nothing any more, the staged one does.
        let stagedKey = try KeyFile.read(at: staged, passphrase: { try options.passphrase() })
        guard let opened = try? Vault.open(at: directory, masterKey: stagedKey) else {
          throw VaultError.wrongKey(expectedKeyIDs: expected, actualKeyID: actual)
        }
        vault = opened
      }
      // One lock around new key file, rotation and swap: a second `rotate` is refused
      // before it touches any file.
      try vault.withKeyOperationLock {
        try rotate(vault: vault, oldKey: oldKey, directory: directory)
      }
    }

    private func rotate(vault: Vault, oldKey: MasterKey, directory: String) throws {
      let keyPath = try options.keyFilePath
      let swap = KeyFileSwap(keyPath: keyPath)
      let passphrase =
        try KeyFile.isPassphraseProtected(at: keyPath) ? try options.passphrase() : nil
      if newKeyFile == nil, FileManager.default.fileExists(atPath: swap.stagedPath),
        try finishInterruptedSwap(directory: directory, oldKey: oldKey, swap: swap)
      {
        return
      }
      let status = try vault.keyStatus()
      guard status.activeKeyID == oldKey.keyID else {
        throw VaultError.keyDecryptOnly(keyID: oldKey.keyID, activeKeyID: status.activeKeyID)
      }
      let newPath = newKeyFile ?? swap.stagedPath
      let newKey: MasterKey
      var created = false
      if FileManager.default.fileExists(atPath: newPath) {
        // A key file given on purpose, or the staged key of a run cut short before its commit.
        newKey = try KeyFile.read(at: newPath, passphrase: { try options.passphrase() })
      } else {
        newKey = try MasterKey.generate()
        try KeyFile.write(newKey, to: newPath, passphrase: passphrase)
        created = true
      }
      CrashPoint.reach("rotate-after-new-key-file")
      guard newKey.keyID != oldKey.keyID else {
        throw CLIError("\(newPath) holds the current key \(oldKey.keyID); give a new key")
      }
      let start = Date()
      do {
        _ = try vault.rotateMasterKey(to: newKey, retireOld: retireOld)
      } catch {
        // Nothing was recorded: a key file made by this run would only mislead.
        if created { _ = unlink(newPath) }
        throw error
      }
      let seconds = Date().timeIntervalSince(start)
      if newKeyFile == nil {
        try swap.swap(oldKeyID: oldKey.keyID, keepBackup: !retireOld)
      }
      print(
        "rotated \(status.assets) asset keys from key \(oldKey.keyID) to \(newKey.keyID) in "
          + String(format: "%.3f", seconds) + " s")
      if created, let newKeyFile {
        print("created key file \(newKeyFile) (mode 0600): back it up, keep it secret")
      }
      report(oldKeyID: oldKey.keyID, newKeyPath: newKeyFile ?? keyPath, swap: swap)
    }

    /// A run cut short after its commit left `KEY.new` holding the active key: finish the
    /// key file swap (and the retirement, if asked). Returns false if there is nothing to do.
    private func finishInterruptedSwap(directory: String, oldKey: MasterKey, swap: KeyFileSwap)
      throws -> Bool
    {
      let staged = try KeyFile.read(at: swap.stagedPath, passphrase: { try options.passphrase() })
      guard let vault = try? Vault.open(at: directory, masterKey: staged),
        try vault.keyStatus().activeKeyID == staged.keyID, staged.keyID != oldKey.keyID
      else { return false }
      let oldStillKnown = try vault.keyStatus().keys.contains { $0.keyID == oldKey.keyID }
      if retireOld && oldStillKnown { try vault.retireKey(oldKey.keyID) }
      try swap.swap(oldKeyID: oldKey.keyID, keepBackup: oldStillKnown && !retireOld)
      print("finished the interrupted rotation from key \(oldKey.keyID) to \(staged.keyID)")
      report(oldKeyID: oldKey.keyID, newKeyPath: try options.keyFilePath, swap: swap)
      return true
    }

    private func report(oldKeyID: String, newKeyPath: String, swap: KeyFileSwap) {
      if retireOld {
        print("retired key \(oldKeyID): it no longer opens this vault")
      } else if newKeyFile == nil {
        print(
          "old key kept in \(swap.backupPath(oldKeyID: oldKeyID)) (decrypt-only until "
            + "`vault key retire`); new key in \(newKeyPath)")
      } else {
        print(
          "key \(oldKeyID) is decrypt-only until `vault key retire`; new key in \(newKeyPath)")
      }
    }
  }
}
