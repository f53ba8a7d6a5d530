/// Where chunk slots live in an asset file and what each chunk's AAD binds.
///
/// Slot i starts at `128 + i × (chunkSize + 28)` and holds `nonce(12) ‖ ciphertext ‖ tag(16)`;
/// the final chunk's slot is shorter by the missing plaintext. No lookup is needed to find
/// a chunk: its place is a function of its index.
struct ChunkLayout: Sendable, Equatable {
  let chunkSize: Int
  /// Total plaintext length of the asset.
  let length: UInt64

  var slotSize: Int { chunkSize + VaultFormat.slotOverhead }

  /// Number of chunks (0 for an empty asset).
  var chunkCount: Int {
    Int((length + UInt64(chunkSize) - 1) / UInt64(chunkSize))
  }

  /// File offset of slot `index`.
  func slotOffset(_ index: Int) -> Int64 {
    Int64(VaultFormat.headerLength) + Int64(index) * Int64(slotSize)
  }

  /// Plaintext length of chunk `index`.
  func plaintextLength(_ index: Int) -> Int {
    let start = UInt64(index) * UInt64(chunkSize)
    return Int(min(UInt64(chunkSize), length - start))
  }

  func isFinal(_ index: Int) -> Bool { index == chunkCount - 1 }

  /// Size on disk of the whole file when every chunk is stored.
  var fileSize: Int64 {
    guard chunkCount > 0 else { return Int64(VaultFormat.headerLength) }
    return slotOffset(chunkCount - 1) + Int64(plaintextLength(chunkCount - 1))
      + Int64(VaultFormat.slotOverhead)
  }

  /// Sealed bytes of `chunks` stored chunks (slots only, header excluded).
  func sealedBytes(ofChunk index: Int) -> Int64 {
    Int64(plaintextLength(index) + VaultFormat.slotOverhead)
  }

  /// The chunk indices that the plaintext range [offset, offset+count) touches.
  func chunks(coveringOffset offset: UInt64, count: UInt64) -> Range<Int> {
    guard count > 0 else { return 0..<0 }
    let first = Int(offset / UInt64(chunkSize))
    let last = Int((offset + count - 1) / UInt64(chunkSize))
    return first..<(last + 1)
  }

  /// The 51-byte AAD of chunk `index`:
  /// `"VCHK" ‖ version(2) ‖ header MAC(32) ‖ index(8) ‖ plaintext length(4) ‖ final(1)`.
  static func aad(
    headerMAC: [UInt8], index: Int, plaintextLength: Int, isFinal: Bool
  ) -> [UInt8] {
    var aad = VaultFormat.chunkAADMagic
    aad.reserveCapacity(51)
    Bytes.append(VaultFormat.version, to: &aad)
    aad += headerMAC
    Bytes.append(UInt64(index), to: &aad)
    Bytes.append(UInt32(plaintextLength), to: &aad)
    aad.append(isFinal ? 1 : 0)
    return aad
  }
}
