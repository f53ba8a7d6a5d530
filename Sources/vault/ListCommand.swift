import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault list`: the stored assets.
  struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "list", abstract: "List the stored assets.")

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print a JSON array.")
    var json = false

    func run() throws {
      try reportingErrors {
        let assets = try options.openVault().list()
        if json {
          print(try JSONOutput.encode(assets))
          return
        }
        if assets.isEmpty {
          print("no assets")
          return
        }
        let leased = assets.contains { $0.lease != nil }
        print(
          "ID            SIZE        CHUNKS        TYPE                 "
            + (leased ? "LEASE".padding(toLength: 46, withPad: " ", startingAt: 0) : "") + "NAME")
        for asset in assets {
          let chunks = "\(asset.chunksStored)/\(asset.chunksTotal)"
          print(
            asset.id.prefix(12).padding(toLength: 14, withPad: " ", startingAt: 0)
              + formatBytes(asset.size).padding(toLength: 12, withPad: " ", startingAt: 0)
              + chunks.padding(toLength: 14, withPad: " ", startingAt: 0)
              + column(asset.contentType ?? "-", width: 21)
              + (leased ? column(LeaseText.describe(asset.lease), width: 46) : "")
              + asset.name + (asset.pinned ? " (pinned)" : ""))
        }
      }
    }
  }

  /// `vault info`: details of one asset.
  struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "info", abstract: "Show one asset's details.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "Asset name, id, or unique id prefix.")
    var asset: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let info = try vault.info(try vault.resolve(asset))
        if json {
          print(try JSONOutput.encode(info))
          return
        }
        let rows: [(String, String)] = [
          ("id", info.id), ("name", info.name),
          ("size", "\(info.size) (\(formatBytes(info.size)))"),
          ("stored", "\(info.storedBytes) bytes on disk"),
          ("chunks", "\(info.chunksStored)/\(info.chunksTotal) of \(info.chunkSize) bytes"),
          ("type", info.contentType ?? "-"), ("pinned", info.pinned ? "yes" : "no"),
          ("generation", "\(info.generation)"), ("key id", info.keyID),
          ("created", JSONOutput.iso8601(info.createdAt)),
          ("last access", JSONOutput.iso8601(info.lastAccess)),
          ("lease", LeaseText.describe(info.lease)),
        ]
        for (label, value) in rows {
          print(label.padding(toLength: 12, withPad: " ", startingAt: 0) + value)
        }
      }
    }
  }

  /// `vault rm`: remove an asset (its key is destroyed first).
  struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "rm",
      abstract: "Remove an asset: its wrapped data key is destroyed first, then its file.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "Asset name, id, or unique id prefix.")
    var asset: String

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let id = try vault.resolve(asset)
        try vault.remove(id)
        print("removed \(id.short)")
      }
    }
  }
}

/// `text` cut or padded to `width` with at least one space after it.
func column(_ text: String, width: Int) -> String {
  let cut = text.count >= width ? String(text.prefix(width - 2)) + "…" : text
  return cut.padding(toLength: width, withPad: " ", startingAt: 0)
}

/// JSON for scripts: sorted keys, ISO 8601 dates.
enum JSONOutput {
  static func encode(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    return String(decoding: try encoder.encode(value), as: UTF8.self)
  }

  static func iso8601(_ date: Date) -> String {
    ISO8601DateFormatter().string(from: date)
  }
}
