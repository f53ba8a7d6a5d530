import ArgumentParser
import VaultCore

/// The `vault` command: an encrypted offline media vault.
@main
struct VaultCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "vault",
    abstract: "An encrypted offline media vault: media sealed per chunk with ChaCha20-Poly1305.",
    version: "0.1.0",
    subcommands: [
      Demo.self, Init.self, Import.self, Export.self, List.self, Info.self, Verify.self,
      Remove.self,
    ])
}
