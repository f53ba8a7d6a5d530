import ArgumentParser
import Foundation
import VaultCore

/// Where the vault is and which key opens it; shared by every command that opens a vault.
struct VaultOptions: ParsableArguments {
  @Option(name: .long, help: "Vault directory (default: $VAULT_DIR).")
  var vault: String?

  @Option(name: .long, help: "Master key file (default: $VAULT_KEY_FILE).")
  var keyFile: String?

  @Option(
    name: .long,
    help: "File whose first line is the key file's passphrase (default: $VAULT_PASSPHRASE).")
  var passphraseFile: String?

  @Option(
    name: .long,
    help: "Environment variable holding the master key as 64 hex digits, instead of a key file.")
  var keyEnv: String?

  var vaultDirectory: String {
    get throws {
      guard let path = vault ?? environment("VAULT_DIR") else {
        throw CLIError("no vault given: pass --vault DIR or set VAULT_DIR")
      }
      return path
    }
  }

  var keyFilePath: String {
    get throws {
      guard let path = keyFile ?? environment("VAULT_KEY_FILE") else {
        throw CLIError("no key file given: pass --key-file FILE or set VAULT_KEY_FILE")
      }
      return path
    }
  }

  /// The passphrase from --passphrase-file or VAULT_PASSPHRASE, if either is set.
  func passphrase() throws -> [UInt8]? {
    if let file = passphraseFile {
      guard let data = FileManager.default.contents(atPath: file) else {
        throw CLIError("cannot read passphrase file \(file)")
      }
      let text = String(decoding: data, as: UTF8.self)
      let firstLine = text.split(separator: "\n", omittingEmptySubsequences: false).first ?? ""
      return Array(firstLine.utf8)
    }
    if let value = environment("VAULT_PASSPHRASE") { return Array(value.utf8) }
    return nil
  }

  func masterKey() throws -> MasterKey {
    try KeyFile.read(at: try keyFilePath, passphrase: { try passphrase() })
  }

  func openVault() throws -> Vault {
    if let keyEnv {
      // The key stays in the environment: nothing is written (EnvironmentKeyProvider).
      return try Vault.open(
        at: try vaultDirectory, keyProvider: EnvironmentKeyProvider(variable: keyEnv))
    }
    return try Vault.open(at: try vaultDirectory, masterKey: try masterKey())
  }
}

func environment(_ name: String) -> String? {
  guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
  return value
}
