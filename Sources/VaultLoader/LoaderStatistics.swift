/// What a ``RangeLoader`` did since it was created.
public struct LoaderStatistics: Sendable, Equatable {
  /// Requests sent to origins (probes included).
  public var originRequests = 0
  /// Body bytes received from origins.
  public var bytesFromOrigin: UInt64 = 0
  /// Bytes delivered to readers.
  public var bytesDelivered: UInt64 = 0
  /// Delivered bytes whose chunks were already stored when the read asked for them.
  public var bytesFromCache: UInt64 = 0
  /// Chunks sealed and recorded from origin bodies.
  public var chunksStored = 0
  /// Store commits: each is one index transaction for the runs it covers.
  public var storeCommits = 0
  /// Stored chunks that failed to open, dropped and fetched again (self-repair).
  public var chunksRepaired = 0
  /// Chunks (or parts of chunks) delivered from stored chunks: cache hits.
  public var hits = 0
  /// Chunks (or parts of chunks) delivered from chunks fetched for the read: cache misses.
  public var misses = 0

  /// Creates empty statistics.
  public init() {}
}
