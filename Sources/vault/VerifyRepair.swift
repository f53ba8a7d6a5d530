import Foundation
import OriginClient
import VaultCore
import VaultLoader

/// `verify --repair`: fetches dropped chunks again through the range loader, for assets
/// that came from an origin (their sealed metadata keeps the URL).
enum VerifyRepair {
  static func refetch(_ results: [VerifyResult], vault: Vault) async throws -> [VerifyResult] {
    let loader = RangeLoader(vault: vault, origin: NIOHTTPOrigin(), log: { printError($0) })
    var repaired = results
    for (position, result) in results.enumerated() where result.dropped > 0 {
      guard let id = AssetID(hex: result.id), let info = try? vault.info(id),
        let origin = info.originURL, let url = URL(string: origin)
      else { continue }
      // The asset was cached under the URL or under a content id (its name).
      let contentID: String? =
        (try? loader.assetID(for: url)) == id
        ? nil : ((try? loader.assetID(for: url, contentID: info.name)) == id ? info.name : nil)
      guard contentID != nil || (try? loader.assetID(for: url)) == id else { continue }
      var fetched = 0
      for index in result.damagedChunks {
        let start = UInt64(index) * UInt64(info.chunkSize)
        let end = min(start + UInt64(info.chunkSize), info.size) - 1
        do {
          for try await _ in loader.read(url, contentID: contentID, from: start, through: end) {}
          fetched += 1
        } catch {
          printError("asset \(id.short): chunk \(index) could not be fetched again: \(error)")
        }
      }
      try await loader.flush()
      repaired[position].refetched = fetched
    }
    return repaired
  }
}
