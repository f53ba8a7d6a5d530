import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault export`: write an asset or a byte range of it in plaintext.
  struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "export",
      abstract: "Write an asset (or a byte range) out in plaintext.",
      discussion: """
        The output file appears under its name only when complete: it is written to a \
        hidden temporary file beside it and renamed at the end.
        """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Asset name, id, or unique id prefix.")
    var asset: String

    @Option(name: .shortAndLong, help: "Output file, or - for stdout (default: stdout).")
    var output: String = "-"

    @Option(help: "Inclusive byte range START-END (or START-), like HTTP.")
    var range: ByteRange?

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let id = try vault.resolve(asset)
        let length = try vault.info(id).size
        let closed = range?.resolved(length: length)
        if output == "-" {
          try vault.export(id, toFileDescriptor: STDOUT_FILENO, range: closed)
        } else {
          let progress = ProgressLine("exporting")
          defer { progress.finish() }
          try vault.export(id, to: output, range: closed, progress: progress.update)
        }
      }
    }
  }
}
