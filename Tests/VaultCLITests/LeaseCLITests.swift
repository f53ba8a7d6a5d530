import Foundation
import Testing

/// `vault lease`, `vault shred`, lease options on import, lease state in `list`, and
/// `--key-env`, through the real binary.
@Suite("CLI: leases, shred, key from the environment")
struct LeaseCLITests {
  func leaseStatus(_ cli: CLI, _ name: String) throws -> String? {
    let list = try cli.run(["list", "--json"])
    let assets = try JSONSerialization.jsonObject(with: list.stdoutData) as? [[String: Any]]
    let asset = assets?.first { $0["name"] as? String == name }
    return (asset?["lease"] as? [String: Any])?["status"] as? String
  }

  @Test("expired lease: export refused in one line, shown in list, swept by shred --expired")
  func expiredLease() throws {
    let cli = try CLI.initialised()
    defer { cli.cleanup() }
    try Data(repeating: 7, count: 100_000).write(to: URL(fileURLWithPath: cli.path("in.bin")))
    #expect(
      try cli.run(["import", cli.path("in.bin"), "--id", "old", "--expires", "2000-01-01"]).status
        == 0)
    #expect(
      try cli.run(["import", cli.path("in.bin"), "--id", "new", "--for", "30d", "--max-plays", "3"])
        .status == 0)
    #expect(try cli.run(["import", cli.path("in.bin"), "--id", "free"]).status == 0)
    #expect(try leaseStatus(cli, "old") == "expired")
    #expect(try leaseStatus(cli, "new") == "active")
    #expect(try cli.run(["list"]).stdout.contains("0/3 plays"))
    let export = try cli.run(["export", "old", "-o", cli.path("out")])
    #expect(export.status == 1)
    #expect(
      export.stderr.hasPrefix("vault: error: asset ") && export.stderr.contains("lease expired"))
    #expect(export.stderr.split(separator: "\n").count == 1)
    let shred = try cli.run(["shred", "--expired"])
    #expect(shred.status == 0)
    #expect(shred.stdout.contains("shredded 0 expired assets"))  // export shredded it already
    #expect(try cli.run(["info", "old"]).status == 1)
    // Change and clear a lease.
    #expect(try cli.run(["lease", "free", "--expires", "2000-01-02T00:00:00Z"]).status == 0)
    #expect(try cli.run(["lease", "new", "--clear"]).stdout.contains("no lease"))
    let sweep = try cli.run(["shred", "--expired"])
    #expect(sweep.stdout.contains("shredded 1 expired asset"))
    let names = try cli.run(["list", "--json"]).stdout
    #expect(names.contains("\"new\"") && !names.contains("\"free\""))
  }

  @Test("bad lease arguments are one line and a usage exit")
  func badArguments() throws {
    let cli = try CLI.initialised()
    defer { cli.cleanup() }
    try Data(repeating: 1, count: 10).write(to: URL(fileURLWithPath: cli.path("a")))
    #expect(try cli.run(["import", cli.path("a")]).status == 0)
    for args in [
      ["lease", "a", "--expires", "tomorrow"],
      ["lease", "a", "--expires", "2030-01-01", "--for", "1d"],
      ["lease", "a", "--max-plays", "0"], ["shred"], ["lease", "a", "--clear", "--for", "1d"],
    ] {
      let result = try cli.run(args)
      #expect(result.status != 0, "\(args)")
      #expect(result.stderr.split(separator: "\n").count == 1, "\(args): \(result.stderr)")
    }
  }

  @Test("--key-env: the master key from an environment variable")
  func keyFromEnvironment() throws {
    var cli = try CLI()
    defer { cli.cleanup() }
    cli.environment["VAULT_DIR"] = cli.path("v")
    cli.environment["VAULT_KEY_FILE"] = CLI.repositoryRoot + "/Keys/demo.key"
    #expect(try cli.run(["init"]).status == 0)
    // Keys/demo.key as hex.
    cli.environment["DEMO_KEY_HEX"] =
      "05ef30d4b7a28133d80f701570e415ce3dcb111e85add2ef7bd8ae5672bf81c9"
    cli.environment["VAULT_KEY_FILE"] = nil
    #expect(try cli.run(["list", "--key-env", "DEMO_KEY_HEX"]).status == 0)
    let missing = try cli.run(["list", "--key-env", "NOT_SET_ANYWHERE"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("NOT_SET_ANYWHERE is not set"))
  }
}
