import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault stats`: what the vault holds and how the cache has been used.
  struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "stats",
      abstract: "Assets, bytes stored and pinned, limits, cache hits and misses.",
      discussion: """
        Hits and misses count the chunks (or parts of chunks) the range loader \
        delivered from the vault or had to fetch, summed over every process that used this \
        vault since it was created or since `vault stats --reset`.
        """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print JSON.")
    var json = false

    @Flag(help: "Set the usage counters back to zero (after printing them).")
    var reset = false

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let stats = try vault.stats()
        if json {
          print(try JSONOutput.encode(stats))
        } else {
          let limit = stats.limits.maxBytes.map { formatBytes($0) } ?? "none"
          let age = stats.limits.maxAge.map { DurationArgument.format($0) } ?? "none"
          let reads = stats.hits + stats.misses
          let ratio =
            reads > 0
            ? String(format: " (%.1f%% hits)", 100 * Double(stats.hits) / Double(reads)) : ""
          let rows: [(String, String)] = [
            ("assets", "\(stats.assets) (\(stats.completeAssets) complete)"),
            (
              "stored",
              "\(formatBytes(stats.storedBytes)) on disk, \(formatBytes(stats.plaintextBytes)) of media"
            ),
            ("pinned", "\(stats.pinnedAssets) assets, \(formatBytes(stats.pinnedBytes))"),
            ("limits", "max-bytes \(limit), max-age \(age)"),
            ("hits / misses", "\(stats.hits) / \(stats.misses)\(ratio)"),
            ("from cache", formatBytes(UInt64(max(0, stats.bytesFromCache)))),
            ("from origin", formatBytes(UInt64(max(0, stats.bytesFromOrigin)))),
            ("repairs", "\(stats.repairs) damaged chunks dropped and fetched again"),
            ("evictions", "\(stats.evictions) assets"),
          ]
          for (label, value) in rows {
            print(label.padding(toLength: 14, withPad: " ", startingAt: 0) + value)
          }
        }
        if reset { try vault.resetCounters() }
      }
    }
  }
}
