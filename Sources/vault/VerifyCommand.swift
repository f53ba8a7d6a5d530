import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault verify`: open every stored chunk and name the ones that fail.
  struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "verify",
      abstract: "Open every stored chunk; exit non-zero and name the bad chunks if any fail.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "Asset name, id, or id prefix (default: all assets).")
    var asset: String?

    @Flag(help: "Print JSON results.")
    var json = false

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let id = try asset.map { try vault.resolve($0) }
        let progress = ProgressLine("verifying")
        let results = try vault.verify(id, progress: progress.update)
        progress.finish()
        if json {
          print(try JSONOutput.encode(results))
        } else {
          for result in results {
            let label = "\(result.id.prefix(12)) \(result.name ?? "?")"
            if let problem = result.problem {
              print("FAIL \(label): \(problem)")
            } else if !result.damagedChunks.isEmpty {
              let list = result.damagedChunks.map(String.init).joined(separator: ", ")
              print("FAIL \(label): damaged chunks \(list)")
            } else {
              print("ok   \(label): \(result.chunksChecked) chunks")
            }
          }
        }
        let bad = results.filter { !$0.ok }
        if !bad.isEmpty {
          printError("\(bad.count) of \(results.count) assets failed verification")
          throw ExitCode.failure
        }
      }
    }
  }
}
