import Foundation

/// What ``Vault/reconcile()`` repaired: the index and the files agree again.
public struct ReconcileReport: Sendable, Codable, Equatable {
  /// Asset files (or temporary files) no index row owns and no writer holds, removed.
  public var orphanFilesRemoved = 0
  /// Index rows whose file was missing, dropped.
  public var recordsDropped = 0
  /// Presence bits of chunks whose slot lies past the end of their file, cleared.
  public var chunksCleared = 0

  /// A report of nothing done.
  public init() {}

  /// Whether anything was repaired.
  public var isEmpty: Bool { orphanFilesRemoved == 0 && recordsDropped == 0 && chunksCleared == 0 }
}

extension Vault {
  /// Makes the index and the asset files agree after a crash (``open(at:masterKey:)`` runs
  /// it): files no row owns are removed unless a writer holds them (an import or fill in
  /// progress in another process), and rows whose file is gone are dropped. With
  /// `checkSizes`, presence bits of chunks past the end of their file are cleared too
  /// (without it, `verify` reports them as damaged and `verify --repair` drops them). Chunks are not opened here (that is `verify`): the
  /// cost is one directory scan, plus one `stat` per asset with `checkSizes`.
  ///
  /// The write ordering (FORMAT.md §7) means a crash leaves at most an orphan file (a
  /// crash before the row was written, or after it was deleted) or a leftover temporary
  /// name; the other repairs cover files damaged or removed behind the vault's back. A chunk
  /// past the end of a truncated file is also caught when read (self-repair).
  @discardableResult
  public func reconcile(now: Date = Date(), checkSizes: Bool = false) throws -> ReconcileReport {
    var report = ReconcileReport()
    let assets = try index.footprints()
    var owned: [String: AssetFootprint] = [:]
    owned.reserveCapacity(assets.count)
    for asset in assets { owned["\(asset.id.hex).\(asset.generation)"] = asset }
    // One pass over chunks/: names the index owns are only marked; anything else that looks
    // like an asset file is a candidate orphan.
    var seen = Set<String>(minimumCapacity: assets.count)
    var strays: [(name: String, path: String)] = []
    let chunks = directory + "/" + VaultFormat.chunksDirectoryName
    for shard in FileSystem.listDirectory(chunks) where shard.utf8.count == 2 {
      let folder = chunks + "/" + shard
      for name in FileSystem.listDirectory(folder) {
        if owned[name] != nil {
          seen.insert(name)
        } else if Self.isAssetFileName(name) {
          strays.append((name, folder + "/" + name))
        }
      }
    }
    let idsSeen = Set(seen.map { $0.prefix(64) })
    let idsOwned = Set(assets.map { Substring($0.id.hex) })
    var idsWithStrays = Set<Substring>()
    for stray in strays {
      let id = stray.name.prefix(64)
      idsWithStrays.insert(id)
      // A row whose own file is missing while another generation's file exists is damage
      // (or tampering), not a crash: leave the id alone for `verify` to report.
      if idsOwned.contains(id), !idsSeen.contains(id) { continue }
      if try removeOrphan(stray.path, name: stray.name, now: now) {
        report.orphanFilesRemoved += 1
      }
    }
    for (name, asset) in owned where !seen.contains(name) {
      // No file of any generation: the record is of nothing.
      if !idsWithStrays.contains(Substring(asset.id.hex)),
        try index.deleteAsset(asset.id, ifGeneration: asset.generation)
      {
        report.recordsDropped += 1
      }
    }
    if checkSizes {
      for (name, asset) in owned where seen.contains(name) {
        guard let size = FileSystem.size(of: assetPath(asset.id, generation: asset.generation))
        else { continue }
        report.chunksCleared += try clearChunksPastEnd(asset, fileSize: size)
      }
    }
    if report.orphanFilesRemoved > 0 { FileSystem.syncDirectory(chunks) }
    return report
  }

  /// Removes a file no row owns unless a writer holds it (or, for a temporary name, it is
  /// younger than a minute: its creator locks it a moment after creating it).
  private func removeOrphan(_ path: String, name: String, now: Date) throws -> Bool {
    if name.contains(".new-"),
      let age = FileSystem.age(of: path, now: now.timeIntervalSince1970), age < 60
    {
      return false
    }
    let lock = FileLock(path: path)
    guard lock.tryExclusive() else { return false }
    // The row may have been written since the listing (a writer that just finished).
    if try index.asset(owned: name) { return false }
    FileSystem.remove(path)
    return true
  }

  /// Clears the presence bits of chunks whose slot does not fit in a file of `fileSize`.
  private func clearChunksPastEnd(_ asset: AssetFootprint, fileSize: Int64) throws -> Int {
    let layout = ChunkLayout(chunkSize: asset.chunkSize, length: asset.length)
    guard asset.chunksStored > 0, layout.chunkCount > 0 else { return 0 }
    let last = layout.chunkCount - 1
    let lastEnd =
      layout.slotOffset(last) + Int64(layout.plaintextLength(last) + VaultFormat.slotOverhead)
    if fileSize >= lastEnd { return 0 }
    // Slots are fixed: the first chunk whose slot ends past the file's end, and all after.
    let slot = Int64(layout.chunkSize + VaultFormat.slotOverhead)
    let fitting = Int(max(0, (fileSize - Int64(VaultFormat.headerLength)) / slot))
    guard fitting <= last else { return 0 }
    let beyond = Array(fitting...last)
    return try index.clearChunks(asset.id, generation: asset.generation, indices: beyond)
  }

  /// `<64 hex>.<generation>`, or that with a `.new-PID-N` temporary suffix.
  static func isAssetFileName(_ name: String) -> Bool {
    let bytes = Array(name.utf8)
    guard bytes.count >= 66, bytes[64] == UInt8(ascii: "."),
      bytes[0..<64].allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
    else { return false }
    let generation = bytes[65...].prefix { $0 != UInt8(ascii: ".") }
    return !generation.isEmpty && generation.allSatisfy { (0x30...0x39).contains($0) }
  }
}

extension VaultIndex {
  /// Whether a row owns the file named `HEX.GENERATION`.
  func asset(owned name: String) throws -> Bool {
    let parts = name.split(separator: ".")
    guard parts.count == 2, let generation = UInt64(parts[1]),
      let id = AssetID(hex: String(parts[0]))
    else { return false }
    return try asset(id).map { UInt64($0.generation) == generation } ?? false
  }
}
