import VaultCrypto

/// The keys of one asset generation, all derived from its random 256-bit data key with
/// HKDF-SHA256 (empty salt, distinct info labels), so each has one job:
/// the chunk key seals chunks, the header key MACs the asset header, the meta key seals
/// the asset's metadata. Destroying the wrapped data key destroys all three.
struct AssetKeys: Sendable {
  let dataKey: SymmetricKey
  let chunkKey: SymmetricKey
  let headerKey: SymmetricKey
  let metaKey: SymmetricKey

  init(dataKey: SymmetricKey) throws {
    self.dataKey = dataKey
    func derive(_ label: String) throws -> SymmetricKey {
      try cryptoCall {
        try HKDFSHA256.deriveKey(
          inputKeyMaterial: dataKey, salt: [], info: Array(label.utf8), outputByteCount: 32)
      }
    }
    chunkKey = try derive(VaultFormat.labelChunkKey)
    headerKey = try derive(VaultFormat.labelHeaderKey)
    metaKey = try derive(VaultFormat.labelMetaKey)
  }

  static func generate() throws -> AssetKeys {
    try AssetKeys(dataKey: cryptoCall { try SymmetricKey.random(byteCount: 32) })
  }

  /// AAD for wrapping this asset's data key under the master wrapping key.
  static func wrapAAD(assetID: AssetID, generation: UInt64, keyID: String) -> [UInt8] {
    var aad = Array(VaultFormat.labelDataKeyAAD.utf8)
    aad.append(0)
    aad += assetID.bytes
    Bytes.append(generation, to: &aad)
    aad += Array(keyID.utf8)
    return aad
  }

  /// AAD for sealing the asset's metadata under the meta key.
  static func metaAAD(assetID: AssetID, generation: UInt64) -> [UInt8] {
    var aad = Array(VaultFormat.labelMetaAAD.utf8)
    aad.append(0)
    aad += assetID.bytes
    Bytes.append(generation, to: &aad)
    return aad
  }
}
