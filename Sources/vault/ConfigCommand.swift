import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault config`: the vault's sealed settings (today the cache-key rules).
  struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "config",
      abstract: "Show or edit the vault's cache-key rules and cache limits (stored sealed).",
      discussion: """
        Changing the rules changes the asset ids URLs map to from then on; assets cached \
        earlier keep their ids and stay reachable by name or id.
        """,
      subcommands: [Show.self, SetLimit.self, UnsetLimit.self, Alias.self, Volatile.self],
      defaultSubcommand: Show.self)
  }
}

extension VaultCommand.Config {
  /// `vault config show`.
  struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "show", abstract: "Print the volatile query parameters and host alias groups.")

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        let rules = try vault.cacheKeyRules()
        let limits = try vault.cacheLimits()
        if json {
          print(try JSONOutput.encode(ConfigShow(rules: rules, limits: limits)))
          return
        }
        printRules(rules)
        print("cache limits:")
        print("  max-bytes \(limits.maxBytes.map { formatBytes($0) } ?? "none")")
        print("  max-age   \(limits.maxAge.map { DurationArgument.format($0) } ?? "none")")
      }
    }
  }

  /// `vault config alias add|remove`.
  struct Alias: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "alias",
      abstract: "Edit host alias groups: hosts that serve the same content share cache keys.",
      subcommands: [Add.self, Remove.self])

    /// `vault config alias add HOST HOST...`.
    struct Add: ParsableCommand {
      static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Make the hosts one origin (the first new group's host is its canonical name).",
        discussion: """
          If one of the hosts is already in a group, the others join that group and its \
          canonical name stays. Hosts in two different groups are refused.
          """)

      @OptionGroup var options: VaultOptions

      @Argument(help: "Two or more host names, e.g. cdn-a.example.com cdn-b.example.com.")
      var hosts: [String] = []

      func validate() throws {
        guard hosts.count >= 2 else {
          throw ValidationError("alias add needs at least two hosts")
        }
      }

      func run() throws {
        try reportingErrors {
          var group: HostAliasGroup?
          try options.openVault().updateCacheKeyRules { group = try $0.addAliases(hosts) }
          if let group { print("alias group \(describe(group))") }
        }
      }
    }

    /// `vault config alias remove HOST`.
    struct Remove: ParsableCommand {
      static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Take a host out of its alias group (a group left with one host is removed).")

      @OptionGroup var options: VaultOptions

      @Argument(help: "The host name.")
      var host: String

      func run() throws {
        try reportingErrors {
          try options.openVault().updateCacheKeyRules { try $0.removeAlias(host) }
          print("removed \(host) from its alias group")
        }
      }
    }
  }

  /// `vault config volatile add|remove|reset`.
  struct Volatile: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "volatile",
      abstract: "Edit the query parameters dropped from cache keys (signed-URL and CDN tokens).",
      subcommands: [Add.self, Remove.self, Reset.self])

    /// `vault config volatile add PARAM...`.
    struct Add: ParsableCommand {
      static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Drop these query parameters from cache keys (case-insensitive).")

      @OptionGroup var options: VaultOptions

      @Argument(help: "Parameter names; NAME* matches every name starting with NAME.")
      var parameters: [String] = []

      func validate() throws {
        guard !parameters.isEmpty else { throw ValidationError("give at least one parameter") }
      }

      func run() throws {
        try reportingErrors {
          var added: [String] = []
          try options.openVault().updateCacheKeyRules { rules in
            added = try parameters.filter { try rules.addVolatileParameter($0) }
          }
          let listed = parameters.filter { !added.contains($0) }
          if !added.isEmpty { print("volatile: added \(added.joined(separator: ", "))") }
          if !listed.isEmpty { print("volatile: already listed \(listed.joined(separator: ", "))") }
        }
      }
    }

    /// `vault config volatile remove PARAM...`.
    struct Remove: ParsableCommand {
      static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Keep these query parameters in cache keys again.")

      @OptionGroup var options: VaultOptions

      @Argument(help: "Parameter names or patterns, as `vault config show` lists them.")
      var parameters: [String] = []

      func validate() throws {
        guard !parameters.isEmpty else { throw ValidationError("give at least one parameter") }
      }

      func run() throws {
        try reportingErrors {
          try options.openVault().updateCacheKeyRules { rules in
            for parameter in parameters { try rules.removeVolatileParameter(parameter) }
          }
          print("volatile: removed \(parameters.joined(separator: ", "))")
        }
      }
    }

    /// `vault config volatile reset`.
    struct Reset: ParsableCommand {
      static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Restore the default list of volatile parameters (alias groups are kept).")

      @OptionGroup var options: VaultOptions

      func run() throws {
        try reportingErrors {
          try options.openVault().updateCacheKeyRules {
            $0.volatileParameters = CacheKeyRules.defaultVolatileParameters
          }
          print("volatile: reset to the default list")
        }
      }
    }
  }
}

/// `vault config show --json`: the rules' fields at the top level (as before limits
/// existed), plus `limits`.
private struct ConfigShow: Encodable {
  var rules: CacheKeyRules
  var limits: CacheLimits

  private enum Keys: String, CodingKey { case limits }

  func encode(to encoder: any Encoder) throws {
    try rules.encode(to: encoder)
    var container = encoder.container(keyedBy: Keys.self)
    try container.encode(limits, forKey: .limits)
  }
}

private func describe(_ group: HostAliasGroup) -> String {
  "\(group.canonical) <- \(group.members.joined(separator: ", "))"
}

private func printRules(_ rules: CacheKeyRules) {
  print("volatile query parameters (dropped from cache keys, case-insensitive):")
  if rules.volatileParameters.isEmpty { print("  (none)") }
  var line = " "
  for parameter in rules.volatileParameters {
    if line.count + parameter.count + 1 > 88 {
      print(line)
      line = " "
    }
    line += " " + parameter
  }
  if line.count > 1 { print(line) }
  print("host alias groups (canonical <- members):")
  if rules.aliasGroups.isEmpty { print("  (none)") }
  for group in rules.aliasGroups { print("  " + describe(group)) }
}

extension VaultCommand.Config {
  /// `vault config set max-bytes|max-age VALUE`.
  struct SetLimit: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "set",
      abstract: "Set a cache limit: max-bytes (e.g. 2GiB) or max-age (e.g. 30d, 12h).",
      discussion: """
        Limits are enforced after every write that crosses them (import, the range \
        loader's stores) and by `vault prune`: whole unpinned assets, least recently used \
        first. Pinned assets are never evicted.
        """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "max-bytes or max-age.")
    var name: String

    @Argument(help: "The limit: a size such as 2GiB, or a duration such as 30d.")
    var value: String

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        switch name {
        case "max-bytes":
          guard let bytes = ByteCount(argument: value), bytes.value > 0 else {
            throw CLIError("max-bytes: \(value) is not a size (e.g. 500MiB, 2GiB)")
          }
          try vault.updateCacheLimits { $0.maxBytes = UInt64(bytes.value) }
          print("max-bytes \(formatBytes(UInt64(bytes.value)))")
        case "max-age":
          guard let age = DurationArgument(argument: value), age.seconds > 0 else {
            throw CLIError("max-age: \(value) is not a duration (e.g. 30d, 12h, 90m)")
          }
          try vault.updateCacheLimits { $0.maxAge = age.seconds }
          print("max-age \(DurationArgument.format(age.seconds))")
        default:
          throw CLIError("unknown setting \(name): use max-bytes or max-age")
        }
        if let report = try vault.enforceLimits() {
          print(
            "evicted \(report.evicted.count) assets to fit: \(formatBytes(report.bytesBefore)) -> "
              + formatBytes(report.bytesAfter))
        }
      }
    }
  }

  /// `vault config unset max-bytes|max-age`.
  struct UnsetLimit: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "unset", abstract: "Remove a cache limit: max-bytes or max-age.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "max-bytes or max-age.")
    var name: String

    func run() throws {
      try reportingErrors {
        let vault = try options.openVault()
        switch name {
        case "max-bytes": try vault.updateCacheLimits { $0.maxBytes = nil }
        case "max-age": try vault.updateCacheLimits { $0.maxAge = nil }
        default: throw CLIError("unknown setting \(name): use max-bytes or max-age")
        }
        print("\(name) none")
      }
    }
  }
}
