import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault init`: create a vault and, if the key file does not exist yet, a new key.
  struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "init",
      abstract: "Create a vault; creates a new random key file (mode 0600) if none exists.")

    @OptionGroup var options: VaultOptions

    @Option(help: "Plaintext chunk size: a power of two from 16KiB to 1MiB.")
    var chunkSize = ByteCount(VaultFormat.defaultChunkSize)

    func validate() throws {
      guard VaultFormat.isValidChunkSize(chunkSize.value) else {
        throw ValidationError(
          "--chunk-size \(chunkSize.value) is invalid: use a power of two from 16KiB to 1MiB")
      }
    }

    func run() throws {
      try reportingErrors {
        let directory = try options.vaultDirectory
        let keyPath = try options.keyFilePath
        try Vault.checkCanCreate(at: directory)
        let key: MasterKey
        var created = false
        if FileManager.default.fileExists(atPath: keyPath) {
          key = try options.masterKey()
        } else {
          key = try MasterKey.generate()
          try KeyFile.write(key, to: keyPath, passphrase: try options.passphrase())
          created = true
        }
        _ = try Vault.create(at: directory, masterKey: key, chunkSize: chunkSize.value)
        print("created vault \(directory) (chunk size \(chunkSize.value), key id \(key.keyID))")
        if created { print("created key file \(keyPath) (mode 0600): back it up, keep it secret") }
      }
    }
  }
}
