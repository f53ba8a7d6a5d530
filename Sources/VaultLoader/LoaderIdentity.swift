import Foundation
import VaultCore

/// Maps a URL (or an explicit content id, which wins) to the asset identity and id, with
/// the vault's cache-key rules (volatile parameters dropped, host aliases folded).
enum LoaderIdentity {
  static func resolve(vault: Vault, url: URL, contentID: String?) throws -> (
    identity: AssetIdentity, id: AssetID
  ) {
    guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
      throw LoaderError.unsupportedURL(url.absoluteString)
    }
    do {
      return try vault.assetID(forURL: url, contentID: contentID)
    } catch VaultError.invalidArgument(let reason) {
      throw LoaderError.unsupportedURL("\(url.absoluteString) (\(reason))")
    } catch let error as VaultError {
      throw LoaderError.vault(error.description)
    }
  }
}
