import ArgumentParser
import Foundation
import VaultCore

/// The `vault` command: an encrypted offline media vault.
@main
struct VaultCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "vault",
    abstract: "An encrypted offline media vault: media sealed per chunk with ChaCha20-Poly1305.",
    version: "0.1.0",
    subcommands: [
      Demo.self, Init.self, Import.self, Export.self, List.self, Info.self, Verify.self,
      Remove.self, Pin.self, Unpin.self, Prune.self, Stats.self, Fetch.self, Prefetch.self,
      Serve.self, KeyOf.self, Config.self, Key.self, LeaseAsset.self, Shred.self, Bench.self,
    ])

  /// Parses and runs like ArgumentParser's default, but every error is one line on stderr
  /// (`vault: error: ...`): usage errors do not print the usage block; `--help` still does.
  static func main() async {
    do {
      var command = try parseAsRoot()
      if var asyncCommand = command as? AsyncParsableCommand {
        try await asyncCommand.run()
      } else {
        try command.run()
      }
    } catch {
      let code = exitCode(for: error)
      if code == .success {
        print(fullMessage(for: error))
        Foundation.exit(0)
      }
      let message =
        self.message(for: error)
        .split(separator: "\n").first.map(String.init) ?? ""
      if !message.isEmpty {
        printError(message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message)
      }
      Foundation.exit(code.rawValue)
    }
  }
}
