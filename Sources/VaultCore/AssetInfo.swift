import Foundation

/// What `vault list` and `vault info` show about one asset.
public struct AssetInfo: Sendable, Codable, Equatable {
  /// The opaque asset id (64 hex digits).
  public var id: String
  /// The name or content id it was stored under (from the sealed metadata).
  public var name: String
  /// Plaintext length in bytes.
  public var size: UInt64
  /// Bytes on disk for this asset: header plus the sealed slots of stored chunks.
  public var storedBytes: Int64
  /// Plaintext chunk size.
  public var chunkSize: Int
  /// Chunks stored.
  public var chunksStored: Int
  /// Chunks the whole asset has.
  public var chunksTotal: Int
  /// MIME type, if known.
  public var contentType: String?
  /// Pinned assets are never evicted.
  public var pinned: Bool
  /// Last time the asset was read.
  public var lastAccess: Date
  /// When the asset (its first generation) was stored.
  public var createdAt: Date
  /// Key generation of the stored chunks.
  public var generation: UInt64
  /// Id of the master key its data key is wrapped under.
  public var keyID: String
  /// Whether every chunk is stored.
  public var complete: Bool
  /// Origin URL, for assets that came through the range loader.
  public var originURL: String?
  /// Origin validator (ETag or Last-Modified) of the stored generation, if any.
  public var validator: String?
  /// The asset's lease, if it has one (`status` says whether it still allows reads).
  public var lease: LeaseSummary? = nil
}

/// Counters a process can read to see what the vault did (tests use them to prove a read
/// opened only the chunks it touched).
public struct VaultStatistics: Sendable, Equatable {
  /// Chunks authenticated and decrypted.
  public var chunksOpened: Int = 0
  /// Chunks sealed.
  public var chunksSealed: Int = 0
  /// Chunks that failed authentication when read.
  public var chunksRefused: Int = 0
}

/// Progress of a long operation, reported to an optional callback.
public struct OperationProgress: Sendable {
  /// Plaintext bytes processed so far.
  public var bytesDone: UInt64
  /// Total plaintext bytes, when known.
  public var bytesTotal: UInt64?

  /// Creates a progress report.
  public init(bytesDone: UInt64, bytesTotal: UInt64?) {
    self.bytesDone = bytesDone
    self.bytesTotal = bytesTotal
  }
}
