import VaultCrypto

/// The authenticated 128-byte header at the start of every asset file.
///
/// Layout (little-endian), see docs/FORMAT.md:
/// ```
/// 0   8  magic "VLTASSET"
/// 8   2  format version
/// 10  2  header length (128)
/// 12  4  chunk size
/// 16  32 asset id
/// 48  8  generation
/// 56  8  total plaintext length (0xFFFF_FFFF_FFFF_FFFF = not known when written)
/// 64  32 validator digest: HMAC(header key, label ‖ 0 ‖ validator), zeros if none
/// 96  32 header MAC: HMAC-SHA256(header key, bytes 0..<96)
/// ```
/// The header MAC doubles as the header digest bound into every chunk's AAD.
struct AssetHeader: Sendable, Equatable {
  var chunkSize: Int
  var assetID: AssetID
  var generation: UInt64
  /// `nil` when the length was not known when the header was written (stdin import).
  var totalLength: UInt64?
  var validatorDigest: [UInt8]
  /// The MAC over the first 96 bytes; set by ``encode(headerKey:)`` or ``decode``.
  private(set) var mac: [UInt8] = []

  init(
    chunkSize: Int, assetID: AssetID, generation: UInt64, totalLength: UInt64?,
    validator: String?, headerKey: SymmetricKey
  ) throws {
    self.chunkSize = chunkSize
    self.assetID = assetID
    self.generation = generation
    self.totalLength = totalLength
    if let validator {
      var message = Array(VaultFormat.labelValidator.utf8)
      message.append(0)
      message += Array(validator.utf8)
      validatorDigest = try cryptoCall {
        try HMACSHA256.authenticationCode(for: message, key: headerKey)
      }
    } else {
      validatorDigest = [UInt8](repeating: 0, count: 32)
    }
    mac = try cryptoCall {
      try HMACSHA256.authenticationCode(for: unauthenticatedBytes(), key: headerKey)
    }
  }

  private init(
    chunkSize: Int, assetID: AssetID, generation: UInt64, totalLength: UInt64?,
    validatorDigest: [UInt8], mac: [UInt8]
  ) {
    self.chunkSize = chunkSize
    self.assetID = assetID
    self.generation = generation
    self.totalLength = totalLength
    self.validatorDigest = validatorDigest
    self.mac = mac
  }

  private func unauthenticatedBytes() -> [UInt8] {
    var bytes = VaultFormat.assetMagic
    Bytes.append(VaultFormat.version, to: &bytes)
    Bytes.append(UInt16(VaultFormat.headerLength), to: &bytes)
    Bytes.append(UInt32(chunkSize), to: &bytes)
    bytes += assetID.bytes
    Bytes.append(generation, to: &bytes)
    Bytes.append(totalLength ?? VaultFormat.unknownLength, to: &bytes)
    bytes += validatorDigest
    return bytes
  }

  /// The full 128 header bytes.
  func encoded() -> [UInt8] {
    unauthenticatedBytes() + mac
  }

  /// Parses and authenticates header bytes read from an asset file.
  /// - Throws: ``VaultError/assetDamaged(asset:reason:)`` if anything does not check out.
  static func decode(_ bytes: [UInt8], headerKey: SymmetricKey, asset: String) throws
    -> AssetHeader
  {
    func damaged(_ reason: String) -> VaultError {
      .assetDamaged(asset: asset, reason: reason)
    }
    guard bytes.count == VaultFormat.headerLength else { throw damaged("header is truncated") }
    guard Array(bytes[0..<8]) == VaultFormat.assetMagic else {
      throw damaged("asset file has no vault header")
    }
    let version = Bytes.read(UInt16.self, from: bytes, at: 8)
    guard version <= VaultFormat.version else {
      throw VaultError.unsupportedFormat(version: Int(version))
    }
    let mac = Array(bytes[96..<128])
    let expected = try cryptoCall {
      try HMACSHA256.authenticationCode(for: Array(bytes[0..<96]), key: headerKey)
    }
    guard ConstantTime.equals(mac, expected) else {
      throw damaged("asset header failed authentication")
    }
    guard version == VaultFormat.version else {
      throw damaged("asset header has format version \(version)")
    }
    let length = Bytes.read(UInt64.self, from: bytes, at: 56)
    return AssetHeader(
      chunkSize: Int(Bytes.read(UInt32.self, from: bytes, at: 12)),
      assetID: AssetID(bytes: Array(bytes[16..<48])),
      generation: Bytes.read(UInt64.self, from: bytes, at: 48),
      totalLength: length == VaultFormat.unknownLength ? nil : length,
      validatorDigest: Array(bytes[64..<96]),
      mac: mac)
  }
}
