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

  /// Whether the asset is sound.
  public var ok: Bool { problem == nil && damagedChunks.isEmpty }
}

extension Vault {
  /// Opens every stored chunk of one asset or of all, on all cores, and reports what fails.
  /// Nothing is changed and no plaintext leaves this function.
  /// - Parameters:
  ///   - id: one asset, or nil for all.
  ///   - progress: called after each batch with the bytes checked.
  /// - Returns: one result per asset.
  public func verify(
    _ id: AssetID? = nil, progress: ((OperationProgress) -> Void)? = nil
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
    return records.map { record in
      verify(record: record) { bytes in
        done += bytes
        progress?(OperationProgress(bytesDone: done, bytesTotal: total))
      }
    }
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
