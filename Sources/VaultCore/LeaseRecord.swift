import Foundation
import GRDB
import VaultCrypto

/// One asset's lease and its counters (table `lease`, migration `v4-leases`), MACed under
/// the lease key so that a row edited without the key is refused (FORMAT.md §5).
struct LeaseRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
  static let databaseTableName = "lease"
  var assetID: Data
  /// The asset row's `createdAt`: kept across generations, new when the asset is stored
  /// anew, so a lease row of an earlier asset under the same id never applies.
  var assetCreatedAt: Double
  var notAfter: Double?
  var maxAgeAfterFirstPlay: Double?
  var maxPlays: Int64?
  var firstPlayAt: Double?
  var plays: Int64
  var lastPlayAt: Double?
  var seenAt: Double
  var mac: Data

  init(assetID: AssetID, assetCreatedAt: Double, state: LeaseState, key: SymmetricKey) throws {
    self.assetID = Data(assetID.bytes)
    self.assetCreatedAt = assetCreatedAt
    notAfter = state.lease.notAfter?.timeIntervalSince1970
    maxAgeAfterFirstPlay = state.lease.maxAgeAfterFirstPlay
    maxPlays = state.lease.maxPlays.map(Int64.init)
    firstPlayAt = state.firstPlayAt?.timeIntervalSince1970
    plays = Int64(state.plays)
    lastPlayAt = state.lastPlayAt?.timeIntervalSince1970
    seenAt = state.seenAt.timeIntervalSince1970
    mac = Data()
    mac = Data(try computeMAC(key: key))
  }

  var state: LeaseState {
    LeaseState(
      lease: Lease(
        notAfter: notAfter.map(Date.init(timeIntervalSince1970:)),
        maxAgeAfterFirstPlay: maxAgeAfterFirstPlay, maxPlays: maxPlays.map(Int.init)),
      firstPlayAt: firstPlayAt.map(Date.init(timeIntervalSince1970:)), plays: Int(plays),
      lastPlayAt: lastPlayAt.map(Date.init(timeIntervalSince1970:)),
      seenAt: Date(timeIntervalSince1970: seenAt))
  }

  /// `HMAC(leaseKey, "vault v1 lease" ‖ 0x00 ‖ assetID ‖ f64 assetCreatedAt ‖ opt f64
  /// notAfter ‖ opt f64 maxAgeAfterFirstPlay ‖ opt u64 maxPlays ‖ opt f64 firstPlayAt ‖
  /// u64 plays ‖ opt f64 lastPlayAt ‖ f64 seenAt)`; `f64` is the IEEE 754 bit pattern as
  /// `u64`, `opt x` is `0x00` when absent, else `0x01 ‖ x`.
  func computeMAC(key: SymmetricKey) throws -> [UInt8] {
    var message = Array(VaultFormat.labelLeaseMAC.utf8)
    message.append(0)
    message += Array(assetID)
    func double(_ value: Double) { Bytes.append(value.bitPattern, to: &message) }
    func optional(_ value: Double?) {
      if let value {
        message.append(1)
        double(value)
      } else {
        message.append(0)
      }
    }
    double(assetCreatedAt)
    optional(notAfter)
    optional(maxAgeAfterFirstPlay)
    if let maxPlays {
      message.append(1)
      Bytes.append(UInt64(bitPattern: maxPlays), to: &message)
    } else {
      message.append(0)
    }
    optional(firstPlayAt)
    Bytes.append(UInt64(bitPattern: plays), to: &message)
    optional(lastPlayAt)
    double(seenAt)
    return try cryptoCall { try HMACSHA256.authenticationCode(for: message, key: key) }
  }

  /// Whether the row is authentic and belongs to the asset created at `createdAt`.
  func isAuthentic(key: SymmetricKey, assetCreatedAt createdAt: Double) -> Bool {
    guard createdAt == assetCreatedAt, let expected = try? computeMAC(key: key) else {
      return false
    }
    return ConstantTime.equals(expected, Array(mac))
  }

  /// The lease key: `HKDF(NK, "", "vault v1 lease key", 32)`.
  static func key(namingKey: SymmetricKey) throws -> SymmetricKey {
    try cryptoCall {
      try HKDFSHA256.deriveKey(
        inputKeyMaterial: namingKey, salt: [], info: Array(VaultFormat.labelLeaseKey.utf8),
        outputByteCount: 32)
    }
  }
}
