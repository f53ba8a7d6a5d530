/// How a media URL is reduced to the identity that names its cached asset: which query
/// parameters are volatile (credentials and expiry times that change from one request of the
/// same file to the next) and which host names are one origin.
///
/// The rules live sealed in the vault's config (``Vault/cacheKeyRules()``), so the host
/// names they list are never stored in clear. ``URLCanonicalizer`` applies them.
///
/// Changing the rules changes the identities later URLs map to; assets already cached keep
/// their ids and stay reachable by name or id, but a URL that maps differently no longer
/// finds them.
public struct CacheKeyRules: Sendable, Codable, Equatable {
  /// Query parameter names dropped from the identity. Matching is case-insensitive on the
  /// percent-decoded name; an entry ending in `*` (such as `X-Amz-*`) matches every name
  /// that starts with the text before the `*`.
  public var volatileParameters: [String]
  /// Groups of host names that serve the same content; a URL on any member is keyed by the
  /// group's canonical name. Matching is case-insensitive; a host is in at most one group.
  public var aliasGroups: [HostAliasGroup]

  /// Creates rules.
  /// - Parameters:
  ///   - volatileParameters: names or `prefix*` patterns to drop from the query.
  ///   - aliasGroups: host alias groups.
  public init(volatileParameters: [String], aliasGroups: [HostAliasGroup] = []) {
    self.volatileParameters = volatileParameters
    self.aliasGroups = aliasGroups
  }

  /// The rules of a vault that was never configured: ``defaultVolatileParameters`` and no
  /// alias groups.
  public static let `default` = CacheKeyRules(volatileParameters: defaultVolatileParameters)

  /// Parameters that carry signed-URL or CDN-token credentials, never content. Each one
  /// changes with every token issued for the same file, so keeping it would cache one file
  /// once per token. Ordinary parameters (`id`, `v`, `quality`, `start`...) are kept: they
  /// may select different bytes.
  ///
  /// - AWS S3 presigned URLs, Signature Version 4: `X-Amz-*` (`X-Amz-Algorithm`,
  ///   `-Credential`, `-Date`, `-Expires`, `-SignedHeaders`, `-Signature`,
  ///   `-Security-Token`); Version 2: `AWSAccessKeyId`, `Expires`, `Signature`.
  /// - Google Cloud Storage signed URLs, V4: `X-Goog-*`; V2: `GoogleAccessId`, `Expires`,
  ///   `Signature`.
  /// - Amazon CloudFront signed URLs: `Expires`, `Signature`, `Key-Pair-Id`, `Policy`.
  /// - Google Cloud CDN signed URLs: `Expires`, `KeyName`, `Signature`.
  /// - Akamai token authentication: `hdnts` and `hdnea` (EdgeAuth tokens), `__gda__` (the
  ///   older token scheme).
  /// - Generic CDN tokens (Bunny and many self-hosted schemes): `token`, `auth`, `exp`.
  /// - Alibaba Cloud and Tencent Cloud CDN URL authentication (type A): `auth_key`.
  /// - Azure Storage shared access signatures: `sig` (the signature), `se` and `st` (expiry
  ///   and start time), `sp` (permissions), `sv` (service version), `sr` (resource kind),
  ///   `spr` (allowed protocols), `sip` (allowed IPs), `si` (stored policy), `ss` and `srt`
  ///   (account SAS services and resource types), and the user-delegation key fields
  ///   `skoid`, `sktid`, `skt`, `ske`, `sks`, `skv`. These names are short: an origin that
  ///   uses one of them for content (say `st` for a start time) must remove it with
  ///   `vault config volatile remove st`.
  public static let defaultVolatileParameters: [String] = [
    "X-Amz-*", "AWSAccessKeyId", "X-Goog-*", "GoogleAccessId", "Expires", "Signature",
    "Key-Pair-Id", "Policy", "KeyName", "hdnts", "hdnea", "__gda__", "token", "auth", "exp",
    "auth_key", "sig", "se", "st", "sp", "sv", "sr", "spr", "sip", "si", "ss", "srt", "skoid",
    "sktid", "skt", "ske", "sks", "skv",
  ]

  // MARK: Matching

  /// Whether a query parameter named `name` (percent-decoded) is dropped from the identity.
  public func isVolatile(_ name: String) -> Bool {
    let lowered = name.lowercased()
    return volatileParameters.contains { pattern in
      let pattern = pattern.lowercased()
      if pattern.hasSuffix("*") { return lowered.hasPrefix(pattern.dropLast()) }
      return lowered == pattern
    }
  }

  /// The name that keys `host`: its alias group's canonical name, or `host` itself, either
  /// way normalised as in a canonical URL (lower case, IPv6 in RFC 5952 form).
  public func canonicalHost(for host: String) -> String {
    let wanted = Self.normalize(host)
    if let index = groupIndex(of: wanted) { return Self.normalize(aliasGroups[index].canonical) }
    return wanted
  }

  private static func normalize(_ host: String) -> String {
    (try? URLCanonicalizer.normalizedHost(host)) ?? host.lowercased()
  }

  // MARK: Editing

  /// Adds a volatile parameter name or `prefix*` pattern.
  /// - Returns: false if an equal pattern (ignoring case) was already listed.
  /// - Throws: ``VaultError/invalidArgument(_:)`` for an empty pattern, a bare `*`, a `*`
  ///   that is not last, or a name with `&`, `=`, `#`, `?`, whitespace or control characters.
  @discardableResult
  public mutating func addVolatileParameter(_ pattern: String) throws -> Bool {
    try Self.validateVolatile(pattern)
    if volatileParameters.contains(where: { $0.lowercased() == pattern.lowercased() }) {
      return false
    }
    volatileParameters.append(pattern)
    return true
  }

  /// Removes a volatile parameter name or pattern (ignoring case), so that parameter is
  /// kept in identities again.
  /// - Throws: ``VaultError/invalidArgument(_:)`` if it is not listed.
  public mutating func removeVolatileParameter(_ pattern: String) throws {
    let before = volatileParameters.count
    volatileParameters.removeAll { $0.lowercased() == pattern.lowercased() }
    guard volatileParameters.count < before else {
      throw VaultError.invalidArgument(
        "\(pattern) is not a volatile parameter (see `vault config show`)")
    }
  }

  /// Makes `hosts` one origin. If none of them is in a group yet, a new group is made whose
  /// canonical name is the first host; if some are in one group, the others join it (its
  /// canonical name stays, so assets keyed under it keep their ids).
  /// - Returns: the group the hosts are now in.
  /// - Throws: ``VaultError/invalidArgument(_:)`` for fewer than two distinct hosts, an
  ///   invalid host name, or hosts that are already in two different groups.
  @discardableResult
  public mutating func addAliases(_ hosts: [String]) throws -> HostAliasGroup {
    var normalized: [String] = []
    for host in hosts {
      let name = try URLCanonicalizer.normalizedHost(host)
      if !normalized.contains(name) { normalized.append(name) }
    }
    guard normalized.count >= 2 else {
      throw VaultError.invalidArgument("an alias group needs at least two different hosts")
    }
    let touched = Set(normalized.compactMap { groupIndex(of: $0) })
    guard touched.count <= 1 else {
      let names = touched.sorted().map { aliasGroups[$0].canonical }.joined(separator: " and ")
      throw VaultError.invalidArgument(
        "those hosts are already in different alias groups (\(names)); remove some first")
    }
    if let index = touched.first {
      for name in normalized where groupIndex(of: name) == nil {
        aliasGroups[index].members.append(name)
      }
      return aliasGroups[index]
    }
    let group = HostAliasGroup(canonical: normalized[0], members: Array(normalized.dropFirst()))
    aliasGroups.append(group)
    return group
  }

  /// Takes `host` out of its alias group. If it was the canonical name, the next member
  /// becomes canonical; a group left with one host is dissolved.
  /// - Throws: ``VaultError/invalidArgument(_:)`` if the host is in no group.
  public mutating func removeAlias(_ host: String) throws {
    let name = try URLCanonicalizer.normalizedHost(host)
    guard let index = groupIndex(of: name) else {
      throw VaultError.invalidArgument("\(host) is in no alias group (see `vault config show`)")
    }
    var hosts = aliasGroups[index].hosts
    hosts.removeAll { Self.normalize($0) == name }
    if hosts.count < 2 {
      aliasGroups.remove(at: index)
    } else {
      aliasGroups[index] = HostAliasGroup(canonical: hosts[0], members: Array(hosts.dropFirst()))
    }
  }

  /// Checks every pattern and host, and that no host is in two groups.
  /// - Throws: ``VaultError/invalidArgument(_:)`` naming the first problem.
  public func validate() throws {
    for pattern in volatileParameters { try Self.validateVolatile(pattern) }
    var seen: Set<String> = []
    for group in aliasGroups {
      guard !group.members.isEmpty else {
        throw VaultError.invalidArgument("alias group \(group.canonical) has no other host")
      }
      for host in group.hosts {
        let name = try URLCanonicalizer.normalizedHost(host)
        guard seen.insert(name).inserted else {
          throw VaultError.invalidArgument("host \(host) is in more than one alias group")
        }
      }
    }
  }

  private func groupIndex(of normalizedHost: String) -> Int? {
    aliasGroups.firstIndex { group in
      group.hosts.contains { Self.normalize($0) == normalizedHost }
    }
  }

  private static func validateVolatile(_ pattern: String) throws {
    let stem = pattern.hasSuffix("*") ? String(pattern.dropLast()) : pattern
    guard !stem.isEmpty else {
      throw VaultError.invalidArgument(
        "a volatile parameter pattern needs a name or prefix before `*`")
    }
    let forbidden: Set<Character> = ["&", "=", "#", "?", "*"]
    for character in stem
    where forbidden.contains(character) || character.isWhitespace
      || character.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
    {
      throw VaultError.invalidArgument(
        "volatile parameter pattern \(pattern) is invalid: `*` may only end it, and it may not"
          + " contain &, =, #, ?, spaces or control characters")
    }
  }

  // MARK: Codable

  private enum CodingKeys: String, CodingKey {
    case volatileParameters, aliasGroups
  }

  /// Decodes rules; a missing field takes its default, so older values stay readable.
  public init(from decoder: any Decoder) throws {
    let container = try decoder.container(keyedBy: CodingKeys.self)
    volatileParameters =
      try container.decodeIfPresent([String].self, forKey: .volatileParameters)
      ?? Self.defaultVolatileParameters
    aliasGroups = try container.decodeIfPresent([HostAliasGroup].self, forKey: .aliasGroups) ?? []
  }

  /// Encodes the rules.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(volatileParameters, forKey: .volatileParameters)
    try container.encode(aliasGroups, forKey: .aliasGroups)
  }
}

/// Host names that serve the same content, such as two CDN edges of one origin.
public struct HostAliasGroup: Sendable, Codable, Equatable {
  /// The name every member is keyed under (lower case).
  public var canonical: String
  /// The other hosts of the group (lower case), not including ``canonical``.
  public var members: [String]

  /// Creates a group.
  /// - Parameters:
  ///   - canonical: the host name identities use.
  ///   - members: the other hosts that serve the same content.
  public init(canonical: String, members: [String]) {
    self.canonical = canonical
    self.members = members
  }

  /// The canonical name followed by the members.
  public var hosts: [String] { [canonical] + members }
}
