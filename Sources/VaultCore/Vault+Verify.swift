import Foundation

/// The outcome of verifying one asset.
public struct VerifyResult: Sendable, Codable, Equatable {
  /// Asset id (hex).
  public var id: String
  /// Asset name, when its metadata opens.
  public var name: String?
  /// Stored chunks checked.
  public var chunksChecked: Int
  /// Indices of stored chunks that failed to open (treated as missing).
  public var damagedChunks: [Int]
  /// An asset-level problem (key record, header, file missing), if any.
  public var problem: String?
  /// Damaged chunks dropped from the presence map by `repair` (to be fetched again).
  public var dropped = 0
  /// Dropped chunks fetched again from the origin (by the CLI's `verify --repair`).
  public var refetched = 0

  /// Whether the asset is sound: nothing damaged, or every damaged chunk fetched again.
  public var ok: Bool {
    problem == nil && (damagedChunks.isEmpty || refetched == damagedChunks.count)
  }
}

extension Vault {
  /// Opens every stored chunk of one asset or of all, on all cores, and reports what fails.
  /// Nothing is changed and no plaintext leaves this function.
  /// - Parameters:
  ///   - id: one asset, or nil for all.
  ///   - progress: called after each batch with the bytes checked.
  /// - Returns: one result per asset.
  ///   - repair: drop damaged chunks from the presence map (the asset becomes partial; the
  ///     range loader fetches them again from the origin on the next read).
  public func verify(
    _ id: AssetID? = nil, repair: Bool = false, progress: ((OperationProgress) -> Void)? = nil
  ) throws -> [VerifyResult] {
    let records: [AssetRecord]
    if let id {
      guard let record = try index.asset(id) else { throw VaultError.unknownAsset(id.short) }
      records = [record]
    } else {
      records = try index.assets()
    }
    let total = records.reduce(UInt64(0)) { $0 + UInt64($1.length) }
    var done: UInt64 = 0
    return try records.map { record in
      var result = verify(record: record) { bytes in
        done += bytes
        progress?(OperationProgress(bytesDone: done, bytesTotal: total))
      }
      if repair, !result.damagedChunks.isEmpty {
        result.dropped = try dropDamagedChunks(
          record.assetID, generation: UInt64(record.generation), indices: result.damagedChunks)
      }
      return result
    }
  }

  /// Drops chunks that failed to open from an asset's presence map, if it is still at
  /// `generation`, and counts them as repairs. The asset becomes partial: the range loader
  /// fetches those chunks again (same origin version, so the same plaintext, sealed under a
  /// fresh nonce); an imported asset reports them missing.
  /// - Returns: the number of chunks dropped.
  @discardableResult
  public func dropDamagedChunks(_ id: AssetID, generation: UInt64, indices: [Int]) throws -> Int {
    let dropped = try index.clearChunks(id, generation: generation, indices: indices)
    if dropped > 0 { try? addCounters(repairs: dropped) }
    return dropped
  }

  private func verify(record: AssetRecord, advance: (UInt64) -> Void) -> VerifyResult {
    let id = record.assetID
    var result = VerifyResult(
      id: id.hex, name: nil, chunksChecked: 0, damagedChunks: [], problem: nil)
    let reader: AssetReader
    do {
      reader = try AssetReader(vault: self, id: id)
      result.name = reader.metadata.name
    } catch {
      result.problem = "\(error)"
      return result
    }
    let layout = reader.layout
    if reader.presence.count != record.chunksStored {
      result.problem =
        "the index claims \(record.chunksStored) stored chunks but its presence map has \(reader.presence.count)"
      return result
    }
    for run in reader.presence.storedRuns(in: 0..<layout.chunkCount) {
      // Verify run by run, batch by batch; a damaged chunk is recorded and skipped.
      var next = run.lowerBound
      while next < run.upperBound {
        let offset = UInt64(next) * UInt64(layout.chunkSize)
        let runEnd =
          UInt64(run.upperBound - 1) * UInt64(layout.chunkSize)
          + UInt64(layout.plaintextLength(run.upperBound - 1))
        do {
          var opened = 0
          try reader.forEachPiece(offset: offset, count: runEnd - offset) { piece in
            opened += piece.count
            advance(UInt64(piece.count))
          }
          result.chunksChecked += run.upperBound - next
          next = run.upperBound
        } catch VaultError.chunkDamaged(_, let index, _) {
          result.damagedChunks.append(index)
          result.chunksChecked += index - next + 1
          next = index + 1
        } catch {
          result.problem = "\(error)"
          return result
        }
      }
    }
    return result
  }
}
