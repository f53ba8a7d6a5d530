import Foundation

/// The vault's cache limits, kept sealed in its config (`vault config set max-bytes 2GiB`).
///
/// Eviction removes whole assets, least recently used first; pinned assets are never
/// evicted. `nil` means no limit.
public struct CacheLimits: Codable, Sendable, Equatable {
  /// Most bytes the asset files may take together (header plus one slot per stored chunk).
  public var maxBytes: UInt64?
  /// Longest time an unpinned asset may go unread before it is evicted.
  public var maxAge: TimeInterval?

  /// Limits; `nil` for none.
  public init(maxBytes: UInt64? = nil, maxAge: TimeInterval? = nil) {
    self.maxBytes = maxBytes
    self.maxAge = maxAge
  }

  /// No limits: nothing is evicted unless `vault prune` is given one.
  public static let none = CacheLimits()

  /// Whether any limit is set.
  public var isEmpty: Bool { maxBytes == nil && maxAge == nil }
}

extension VaultConfigKey where Value == CacheLimits {
  /// The vault's cache limits (``Vault/cacheLimits()``).
  public static var cacheLimits: VaultConfigKey<CacheLimits> { VaultConfigKey("cacheLimits") }
}

extension Vault {
  /// The vault's cache limits, ``CacheLimits/none`` if never set.
  public func cacheLimits() throws -> CacheLimits {
    try config(.cacheLimits) ?? .none
  }

  /// Changes the vault's cache limits in one transaction (two editors lose nothing).
  @discardableResult
  public func updateCacheLimits(_ body: (inout CacheLimits) throws -> Void) throws
    -> CacheLimits
  {
    try updateConfig(.cacheLimits, default: .none, body)
  }
}
