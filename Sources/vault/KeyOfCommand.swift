import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault key-of URL`: the canonical identity and asset id a URL maps to.
  struct KeyOf: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "key-of",
      abstract: "Print the canonical identity and asset id of a media URL, and if it is stored.",
      discussion: """
        The URL is canonicalised with the vault's rules (see `vault config show`): scheme and \
        host lower-cased, default port, userinfo and fragment dropped, dot segments and \
        percent-encoding normalised, volatile (signed-URL and CDN token) query parameters \
        dropped, the rest sorted, and the host replaced by its alias group's canonical name. \
        The asset id is a keyed HMAC of that identity. --id gives an explicit content id \
        that overrides the URL.
        """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "An http or https URL.")
    var url: String

    @Option(name: .customLong("id"), help: "Explicit content id: overrides the URL.")
    var contentID: String?

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let key = try vault.assetID(forURLString: url, contentID: contentID)
        let stored = try vault.hasAsset(key.id)
        if json {
          print(
            try JSONOutput.encode(
              KeyOfOutput(identity: key.identity.canonical, id: key.id.hex, stored: stored)))
          return
        }
        print("identity  \(key.identity.canonical)")
        print("id        \(key.id.hex)")
        print("stored    \(stored ? "yes" : "no")")
      }
    }
  }
}

/// `vault key-of --json` output.
private struct KeyOfOutput: Encodable {
  let identity: String
  let id: String
  let stored: Bool
}
