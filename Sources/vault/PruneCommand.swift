import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault prune`: evict unpinned assets by age and size.
  struct Prune: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "prune",
      abstract: "Evict unpinned assets: unread longer than --max-age, then least recently used.",
      discussion: """
        Without --max-bytes/--max-age, the vault's own limits apply (`vault config set \
        max-bytes 2GiB`, `vault config set max-age 30d`). Eviction removes whole assets; \
        pinned assets are never evicted, and an asset another process is writing is skipped.
        """)

    @OptionGroup var options: VaultOptions

    @Option(help: "Byte limit for this run, e.g. 2GiB (default: the vault's max-bytes).")
    var maxBytes: ByteCount?

    @Option(help: "Age limit for this run, e.g. 30d, 12h (default: the vault's max-age).")
    var maxAge: DurationArgument?

    @Flag(help: "Show what would be evicted; change nothing.")
    var dryRun = false

    @Flag(help: "Print the report as JSON.")
    var json = false

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        var limits = try vault.cacheLimits()
        if let maxBytes { limits.maxBytes = UInt64(maxBytes.value) }
        if let maxAge { limits.maxAge = maxAge.seconds }
        guard !limits.isEmpty else {
          throw CLIError(
            "no limit: give --max-bytes or --max-age, or set one with `vault config set`")
        }
        let report = try vault.prune(limits: limits, dryRun: dryRun)
        if json {
          print(try JSONOutput.encode(report))
          return
        }
        let verb = dryRun ? "would evict" : "evicted"
        for asset in report.evicted {
          let when = JSONOutput.iso8601(Date(timeIntervalSince1970: asset.lastAccess))
          print(
            "\(verb) \(asset.id.prefix(12)) \(asset.name ?? "?") (\(formatBytes(asset.bytes)), "
              + "\(asset.reason), last read \(when))")
        }
        print(
          "\(verb) \(report.evicted.count) assets: \(formatBytes(report.bytesBefore)) -> "
            + "\(formatBytes(report.bytesAfter)); pinned \(formatBytes(report.pinnedBytes))")
        if !report.busy.isEmpty {
          print("skipped \(report.busy.count) assets in use by a writer")
        }
        if report.pinnedOverLimit, let limit = limits.maxBytes {
          printError(
            "pinned assets alone take \(formatBytes(report.pinnedBytes)), over the limit of "
              + "\(formatBytes(limit)); nothing pinned was evicted (unpin some with `vault unpin`)")
        }
      }
    }
  }
}
