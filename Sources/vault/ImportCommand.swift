import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault import`: seal a local file (or stdin) into the vault.
  struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "import", abstract: "Seal a file (or stdin with -) into the vault.")

    @OptionGroup var options: VaultOptions
    @OptionGroup var lease: LeaseOptions

    @Argument(help: "File to import, or - for standard input.")
    var file: String

    @Option(help: "Name (content id) to store it under (default: the file's name).")
    var id: String?

    @Option(help: "MIME type to keep with it (sealed), e.g. video/mp4.")
    var type: String?

    @Flag(help: "Pin it: cache limits and `vault prune` never evict it.")
    var pin = false

    @Flag(help: "Print the stored asset as JSON.")
    var json = false

    func validate() throws {
      if file == "-" && id == nil {
        throw ValidationError("importing from stdin needs --id NAME")
      }
    }

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let name = id ?? URL(fileURLWithPath: file).lastPathComponent
        let progress = ProgressLine("importing")
        defer { progress.finish() }
        var info: AssetInfo
        // The lease is recorded in the same transaction as the asset.
        let lease = lease.lease(now: Date())
        if file == "-" {
          info = try vault.importStream(
            fileDescriptor: STDIN_FILENO, sourceName: "stdin", name: name, contentType: type,
            lease: lease, progress: progress.update)
        } else {
          info = try vault.importFile(
            at: file, name: name, contentType: type ?? MIMEGuess.type(forPath: file),
            lease: lease, progress: progress.update)
        }
        progress.finish()
        if pin {
          try vault.setPinned(try info.idValue, true)
          info = try vault.info(try info.idValue)
        }
        if json {
          print(try JSONOutput.encode(info))
        } else {
          print(
            "imported \(name) as \(info.id.prefix(12)) (\(formatBytes(info.size)), \(info.chunksTotal) chunks)"
          )
        }
      }
    }
  }
}

/// A MIME type from a file extension, for the common media types.
enum MIMEGuess {
  static func type(forPath path: String) -> String? {
    let types: [String: String] = [
      "mp4": "video/mp4", "m4v": "video/x-m4v", "mov": "video/quicktime", "mkv": "video/x-matroska",
      "webm": "video/webm", "ts": "video/mp2t", "mp3": "audio/mpeg", "m4a": "audio/mp4",
      "aac": "audio/aac", "flac": "audio/flac", "ogg": "audio/ogg", "opus": "audio/ogg",
      "wav": "audio/wav", "m3u8": "application/vnd.apple.mpegurl", "jpg": "image/jpeg",
      "png": "image/png", "pdf": "application/pdf",
    ]
    return types[URL(fileURLWithPath: path).pathExtension.lowercased()]
  }
}
