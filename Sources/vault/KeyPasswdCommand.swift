import ArgumentParser
import Foundation
import VaultCore
import VaultCrypto

extension VaultCommand.Key {
  /// `vault key passwd [--key FILE]`: change (add, remove) a key file's passphrase.
  struct Passwd: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "passwd",
      abstract: "Change a key file's passphrase; only the key file is rewritten (atomically).",
      discussion: """
        The current passphrase comes from --passphrase-file or VAULT_PASSPHRASE, the new one \
        from --new-passphrase-file or VAULT_NEW_PASSPHRASE; either is prompted for on the \
        terminal (no echo) when not given. The new file uses scrypt N=2^17, r=8, p=1 unless \
        --scrypt-log-n says otherwise. The master key and the vault do not change.
        """)

    @Option(
      name: [.customLong("key"), .customLong("key-file")],
      help: "The key file (default: $VAULT_KEY_FILE).")
    var key: String?

    @Option(help: "File whose first line is the current passphrase (default: $VAULT_PASSPHRASE).")
    var passphraseFile: String?

    @Option(help: "File whose first line is the new passphrase (default: $VAULT_NEW_PASSPHRASE).")
    var newPassphraseFile: String?

    @Flag(help: "Store the key without a passphrase.")
    var noPassphrase = false

    @Option(help: "scrypt cost as log2(N), 14...20 (default 17).")
    var scryptLogN = 17

    func validate() throws {
      guard (14...20).contains(scryptLogN) else {
        throw ValidationError("--scrypt-log-n must be from 14 to 20")
      }
      if noPassphrase && newPassphraseFile != nil {
        throw ValidationError("--no-passphrase cannot be combined with --new-passphrase-file")
      }
    }

    func run() throws {
      try reportingErrors {
        guard let path = key ?? environment("VAULT_KEY_FILE") else {
          throw CLIError("no key file given: pass --key FILE or set VAULT_KEY_FILE")
        }
        let current = {
          try passphrase(
            file: passphraseFile, variable: "VAULT_PASSPHRASE", prompt: "current passphrase: ")
        }
        // Check the current passphrase before asking for a new one.
        let masterKey = try KeyFile.read(at: path, passphrase: current)
        var newPassphrase: [UInt8]?
        if !noPassphrase {
          guard
            let given = try passphrase(
              file: newPassphraseFile, variable: "VAULT_NEW_PASSPHRASE", prompt: "new passphrase: ")
          else {
            throw CLIError(
              "no new passphrase: give --new-passphrase-file, VAULT_NEW_PASSPHRASE or --no-passphrase"
            )
          }
          if newPassphraseFile == nil && environment("VAULT_NEW_PASSPHRASE") == nil {
            guard try PassphrasePrompt.read("repeat new passphrase: ") == given else {
              throw CLIError("the passphrases do not match; nothing was changed")
            }
          }
          guard !given.isEmpty else { throw CLIError("the new passphrase is empty") }
          newPassphrase = given
        }
        let parameters = Scrypt.Parameters(n: 1 << UInt64(scryptLogN), r: 8, p: 1)
        let start = Date()
        try KeyFile.replace(masterKey, at: path, passphrase: newPassphrase, parameters: parameters)
        let seconds = Date().timeIntervalSince(start)
        if newPassphrase == nil {
          print("key file \(path) (key id \(masterKey.keyID)) is now stored without a passphrase")
        } else {
          print(
            "changed the passphrase of \(path) (key id \(masterKey.keyID); scrypt N=2^\(scryptLogN) "
              + "r=8 p=1, " + String(format: "%.2f", seconds) + " s)")
        }
      }
    }

    /// From a file's first line, an environment variable, or the terminal.
    private func passphrase(file: String?, variable: String, prompt: String) throws -> [UInt8]? {
      if let file {
        guard let data = FileManager.default.contents(atPath: file) else {
          throw CLIError("cannot read passphrase file \(file)")
        }
        let text = String(decoding: data, as: UTF8.self)
        return Array(
          (text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "").utf8)
      }
      if let value = environment(variable) { return Array(value.utf8) }
      return try PassphrasePrompt.read(prompt)
    }
  }
}
