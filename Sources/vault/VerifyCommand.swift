import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault verify`: open every stored chunk and name the ones that fail.
  struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "verify",
      abstract: "Open every stored chunk; exit non-zero and name the bad chunks if any fail.",
      discussion: """
        With --repair, damaged chunks are dropped from the index (the asset becomes partial) \
        and, for assets that came from an origin, fetched again through the range loader \
        (unless --offline); the asset then counts as repaired if every dropped chunk came \
        back. Opening the vault already reconciles the index with the files after a crash.
        """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Asset name, id, or id prefix (default: all assets).")
    var asset: String?

    @Flag(help: "Drop damaged chunks and fetch them again from their origin.")
    var repair = false

    @Flag(help: "With --repair: do not contact origins (damaged chunks are only dropped).")
    var offline = false

    @Flag(help: "Print JSON results.")
    var json = false

    func run() async throws {
      try await reportingErrorsAsync {
        let vault = try options.openVault()
        let id = try asset.map { try vault.resolve($0) }
        let progress = ProgressLine("verifying")
        var results = try vault.verify(id, repair: repair, progress: progress.update)
        progress.finish()
        if repair && !offline {
          results = try await VerifyRepair.refetch(results, vault: vault)
        }
        if json {
          print(try JSONOutput.encode(results))
        } else {
          for result in results {
            let label = "\(result.id.prefix(12)) \(result.name ?? "?")"
            if let problem = result.problem {
              print("FAIL \(label): \(problem)")
            } else if !result.damagedChunks.isEmpty {
              let list = result.damagedChunks.map(String.init).joined(separator: ", ")
              if result.ok {
                print("fixed \(label): damaged chunks \(list) fetched again from the origin")
              } else if result.dropped > 0 {
                print("FAIL \(label): damaged chunks \(list) dropped (now missing)")
              } else {
                print("FAIL \(label): damaged chunks \(list)")
              }
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
