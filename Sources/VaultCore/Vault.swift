import Foundation
import VaultCrypto

/// An encrypted media vault: a directory with a SQLite index and one sealed file per asset.
///
/// ```swift
/// let key = try KeyFile.read(at: "vault.key")
/// let vault = try Vault.open(at: "/path/to/vault", masterKey: key)
/// let info = try vault.importFile(at: "movie.mp4", name: "movie.mp4", contentType: "video/mp4")
/// let reader = try vault.reader(for: info.id)
/// let bytes = try reader.read(offset: 1_000_000, length: 4096)
/// ```
///
/// A `Vault` is thread-safe: the index serialises its own writes, each reader and writer
/// owns its file and cipher contexts. Several processes may open one vault.
public final class Vault: Sendable {
  /// The vault directory.
  public let directory: String
  /// Chunk size for new assets.
  public let chunkSize: Int
  /// Id of the master key this vault was opened with.
  public var keyID: String { masterKey.keyID }

  let index: VaultIndex
  let vaultID: [UInt8]
  let masterKey: MasterKey
  let wrappingKey: SymmetricKey
  let namingKey: SymmetricKey
  /// MACs the `lease` rows (derived from the naming key: every master key that opens the
  /// vault checks the same leases).
  let leaseKey: SymmetricKey
  /// Where lease checks get the time.
  public let clock: VaultClock
  /// Per asset: the sealed metadata last opened for a lease check and whether it says the
  /// asset is leased, so a warm check does no decryption.
  let leasedFlags = Locked([AssetID: (meta: Data, leased: Bool)]())
  /// Per asset: the lease state (nil: none) a check last read or wrote, with its chunk size
  /// and the monotonic time it was read (``VaultFormat/leaseCheckReuse``).
  let recentLeases = Locked([AssetID: (state: LeaseState?, chunkSize: Int, at: Double)]())
  /// Cipher workers per import/export: the machine's cores, at most 8.
  let workers: Int
  private let counters = Counters()
  let accessTracker = AccessTracker()
  private let openRepairs = Locked(ReconcileReport())

  private init(
    directory: String, settings: SettingsRecord, index: VaultIndex, masterKey: MasterKey,
    wrappingKey: SymmetricKey, namingKey: SymmetricKey, clock: VaultClock
  ) throws {
    self.directory = directory
    self.chunkSize = settings.chunkSize
    self.index = index
    self.vaultID = Array(settings.vaultID)
    self.masterKey = masterKey
    self.wrappingKey = wrappingKey
    self.namingKey = namingKey
    self.leaseKey = try LeaseRecord.key(namingKey: namingKey)
    self.clock = clock
    self.workers = min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 8)
  }

  /// What this process has sealed and opened so far.
  public var statistics: VaultStatistics { counters.snapshot }

  func count(opened: Int = 0, sealed: Int = 0, refused: Int = 0) {
    counters.add(opened: opened, sealed: sealed, refused: refused)
  }

  // MARK: Create and open

  /// Creates a new vault in `directory` (which must not exist or be empty).
  /// - Parameters:
  ///   - directory: where to create it.
  ///   - masterKey: the key-encryption key; only its id and a commitment are stored.
  ///   - chunkSize: plaintext chunk size, a power of two from 16 KiB to 1 MiB.
  ///   - clock: the time source of lease checks (the system clock by default).
  /// - Returns: the open vault.
  /// - Throws: ``VaultError/alreadyExists(path:)``, ``VaultError/invalidChunkSize(_:)``, I/O errors.
  public static func create(
    at directory: String, masterKey: MasterKey, chunkSize: Int = VaultFormat.defaultChunkSize,
    clock: VaultClock = .system
  ) throws -> Vault {
    try create(
      at: directory, masterKey: masterKey, chunkSize: chunkSize, clock: clock,
      vaultID: cryptoCall { try SecureRandom.bytes(count: 16) })
  }

  static func create(
    at directory: String, masterKey: MasterKey, chunkSize: Int, clock: VaultClock,
    vaultID: [UInt8]
  ) throws -> Vault {
    guard VaultFormat.isValidChunkSize(chunkSize) else {
      throw VaultError.invalidChunkSize(chunkSize)
    }
    try checkCanCreate(at: directory)
    if FileSystem.exists(directory) {
      _ = chmod(directory, 0o700)
    } else {
      try FileSystem.makeDirectory(directory)
    }
    try FileSystem.makeDirectory(directory + "/" + VaultFormat.chunksDirectoryName)
    let namingKey = try cryptoCall { try SymmetricKey.random(byteCount: 32) }
    let wrappingKey = try masterKey.wrappingKey(vaultID: vaultID)
    let wrappedNamingKey = try cryptoCall {
      try ChaChaPoly.sealKey(
        namingKey, key: wrappingKey,
        aad: namingKeyAAD(vaultID: vaultID, keyID: masterKey.keyID))
    }
    let now = Date().timeIntervalSince1970
    let settings = SettingsRecord(
      formatVersion: Int(VaultFormat.version), vaultID: Data(vaultID), chunkSize: chunkSize,
      activeKeyID: masterKey.keyID, createdAt: now)
    let keyRecord = MasterKeyRecord(
      keyID: masterKey.keyID, commitment: Data(try masterKey.commitment(vaultID: vaultID)),
      wrappedNamingKey: Data(wrappedNamingKey), state: "active", createdAt: now)
    let index = try VaultIndex.open(path: directory + "/" + VaultFormat.indexFileName)
    try index.initialize(settings: settings, masterKey: keyRecord)
    // The marker goes last: a directory without it was never a finished vault.
    let marker = "\(VaultFormat.markerFirstLine)\nformat \(VaultFormat.version)\n"
    try writeSmallFile(directory + "/" + VaultFormat.markerFileName, Array(marker.utf8))
    FileSystem.syncDirectory(directory)
    return try Vault(
      directory: directory, settings: settings, index: index, masterKey: masterKey,
      wrappingKey: wrappingKey, namingKey: namingKey, clock: clock)
  }

  /// Checks that ``create(at:masterKey:chunkSize:)`` could use `directory` (missing or
  /// empty), so a caller can fail before creating a key file.
  /// - Throws: ``VaultError/alreadyExists(path:)``.
  public static func checkCanCreate(at directory: String) throws {
    if FileSystem.exists(directory), !FileSystem.listDirectory(directory).isEmpty {
      throw VaultError.alreadyExists(path: directory)
    }
  }

  /// Opens an existing vault.
  /// - Parameters:
  ///   - directory: the vault directory.
  ///   - masterKey: the key it was created with (checked by id and commitment first).
  ///   - clock: the time source of lease checks (the system clock by default).
  /// - Throws: ``VaultError/notAVault(path:)``, ``VaultError/wrongKey(expectedKeyIDs:actualKeyID:)``,
  ///   ``VaultError/unsupportedFormat(version:)``, ``VaultError/indexDamaged(reason:)``.
  public static func open(
    at directory: String, masterKey: MasterKey, clock: VaultClock = .system
  ) throws -> Vault {
    let index = try openIndex(at: directory)
    let settings = try index.settings()
    guard settings.formatVersion <= VaultFormat.maximumIndexVersion else {
      throw VaultError.unsupportedFormat(version: settings.formatVersion)
    }
    guard VaultFormat.isValidChunkSize(settings.chunkSize), settings.vaultID.count == 16 else {
      throw VaultError.indexDamaged(reason: "the settings row is invalid")
    }
    let vaultID = Array(settings.vaultID)
    let keys = try index.masterKeys()
    guard let record = keys.first(where: { $0.keyID == masterKey.keyID }) else {
      throw VaultError.wrongKey(
        expectedKeyIDs: keys.map(\.keyID).sorted(), actualKeyID: masterKey.keyID)
    }
    let commitment = try masterKey.commitment(vaultID: vaultID)
    guard ConstantTime.equals(commitment, Array(record.commitment)) else {
      // Key ids match (a 64-bit derived value) but the commitment does not: the index row
      // was changed, or the key id collided; either way nothing is opened.
      throw VaultError.indexDamaged(
        reason: "the key commitment for key id \(record.keyID) does not match this key")
    }
    let wrappingKey = try masterKey.wrappingKey(vaultID: vaultID)
    let namingKey: SymmetricKey
    do {
      namingKey = try ChaChaPoly.openKey(
        Array(record.wrappedNamingKey), key: wrappingKey,
        aad: namingKeyAAD(vaultID: vaultID, keyID: masterKey.keyID))
    } catch {
      throw VaultError.indexDamaged(reason: "the wrapped naming key failed authentication")
    }
    let vault = try Vault(
      directory: directory, settings: settings, index: index, masterKey: masterKey,
      wrappingKey: wrappingKey, namingKey: namingKey, clock: clock)
    // After a crash the files and the index may disagree; make them agree before use.
    let repairs = (try? vault.reconcile()) ?? ReconcileReport()
    vault.openRepairs.withLock { $0 = repairs }
    return vault
  }

  /// Checks the marker and opens (and migrates) the index.
  private static func openIndex(at directory: String) throws -> VaultIndex {
    let markerPath = directory + "/" + VaultFormat.markerFileName
    guard let marker = try? readSmallFile(markerPath),
      String(decoding: marker, as: UTF8.self).hasPrefix(VaultFormat.markerFirstLine)
    else {
      throw VaultError.notAVault(path: directory)
    }
    let indexPath = directory + "/" + VaultFormat.indexFileName
    guard FileSystem.exists(indexPath) else {
      throw VaultError.indexDamaged(reason: "\(indexPath) is missing")
    }
    return try VaultIndex.open(path: indexPath)
  }

  /// The vault's public random id (`settings.vaultID`), readable without the key: what a
  /// ``KeyProvider`` gets as the per-vault salt.
  static func publicVaultID(at directory: String) throws -> [UInt8] {
    let settings = try openIndex(at: directory).settings()
    guard settings.vaultID.count == 16 else {
      throw VaultError.indexDamaged(reason: "the settings row is invalid")
    }
    return Array(settings.vaultID)
  }

  /// What opening the vault repaired (``reconcile(now:)``): empty after a clean shutdown.
  public var repairsOnOpen: ReconcileReport { openRepairs.withLock { $0 } }

  static func namingKeyAAD(vaultID: [UInt8], keyID: String) -> [UInt8] {
    var aad = Array(VaultFormat.labelNamingKeyAAD.utf8)
    aad.append(0)
    aad += vaultID
    aad += Array(keyID.utf8)
    return aad
  }

  // MARK: Names and ids

  /// The asset id a name or content id maps to in this vault (whether stored or not).
  public func assetID(for identity: AssetIdentity) throws -> AssetID {
    try AssetID.derive(identity: identity, namingKey: namingKey)
  }

  /// Finds a stored asset by name (content id), full hex id, or a unique hex id prefix
  /// (at least 4 digits), in that order.
  /// - Throws: ``VaultError/unknownAsset(_:)`` or ``VaultError/ambiguousAsset(_:)``.
  public func resolve(_ reference: String) throws -> AssetID {
    let named = try assetID(for: .contentID(reference))
    if try index.asset(named) != nil { return named }
    if let full = AssetID(hex: reference), try index.asset(full) != nil { return full }
    if reference.utf8.count >= 4, Bytes.isHex(reference) {
      let matches = try index.assetIDs(withHexPrefix: reference)
      if matches.count == 1 { return matches[0] }
      if matches.count > 1 { throw VaultError.ambiguousAsset(reference) }
    }
    throw VaultError.unknownAsset(reference)
  }

  /// Path of the sealed file of `id` at `generation`.
  func assetPath(_ id: AssetID, generation: UInt64) -> String {
    let hex = id.hex
    return "\(directory)/\(VaultFormat.chunksDirectoryName)/\(hex.prefix(2))/\(hex).\(generation)"
  }

  /// Loads an asset's record and unwraps its keys.
  func loadAsset(_ id: AssetID) throws -> (record: AssetRecord, keys: AssetKeys) {
    guard let record = try index.asset(id) else { throw VaultError.unknownAsset(id.short) }
    return (record, try unwrapKeys(record))
  }

  func unwrapKeys(_ record: AssetRecord) throws -> AssetKeys {
    let id = record.assetID
    var wrapped = record.wrappedKey
    if record.keyID != masterKey.keyID {
      // A decrypt-only key opens the copy made for it at rotation (VaultIndex+Keys.swift).
      guard
        let copy = try index.assetKeyCopy(
          id, generation: record.generation, keyID: masterKey.keyID)
      else {
        throw VaultError.wrongKey(expectedKeyIDs: [record.keyID], actualKeyID: masterKey.keyID)
      }
      wrapped = copy
    }
    let dataKey: SymmetricKey
    do {
      dataKey = try ChaChaPoly.openKey(
        Array(wrapped), key: wrappingKey,
        aad: AssetKeys.wrapAAD(
          assetID: id, generation: UInt64(record.generation), keyID: masterKey.keyID))
    } catch {
      throw VaultError.assetDamaged(asset: id.short, reason: "its key record failed authentication")
    }
    return try AssetKeys(dataKey: dataKey)
  }

  /// Wraps a data key for storage in the index.
  func wrap(_ keys: AssetKeys, assetID: AssetID, generation: UInt64) throws -> [UInt8] {
    try cryptoCall {
      try ChaChaPoly.sealKey(
        keys.dataKey, key: wrappingKey,
        aad: AssetKeys.wrapAAD(assetID: assetID, generation: generation, keyID: masterKey.keyID))
    }
  }
}

/// Thread-safe counters behind ``Vault/statistics``.
private final class Counters: Sendable {
  private let state = Locked(VaultStatistics())

  func add(opened: Int, sealed: Int, refused: Int) {
    state.withLock {
      $0.chunksOpened += opened
      $0.chunksSealed += sealed
      $0.chunksRefused += refused
    }
  }

  var snapshot: VaultStatistics { state.withLock { $0 } }
}

/// Writes a small file atomically (temp + fsync + rename).
func writeSmallFile(_ path: String, _ bytes: [UInt8], mode: Int = 0o644) throws {
  let temp = path + ".tmp-\(getpid())"
  let fd = posixOpen(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode))
  guard fd >= 0 else { throw VaultError.io(operation: "create", path: temp, errno: errno) }
  defer { _ = close(fd) }
  let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  guard written == bytes.count, fsync(fd) == 0 else {
    let code = errno
    FileSystem.remove(temp)
    throw VaultError.io(operation: "write", path: temp, errno: code)
  }
  try FileSystem.move(temp, to: path)
}

/// Reads a small file whole.
func readSmallFile(_ path: String, limit: Int = 1 << 20) throws -> [UInt8] {
  let fd = posixOpen(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { throw VaultError.io(operation: "open", path: path, errno: errno) }
  defer { _ = close(fd) }
  var bytes: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 4096)
  while bytes.count < limit {
    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if n < 0 {
      if errno == EINTR { continue }
      throw VaultError.io(operation: "read", path: path, errno: errno)
    }
    if n == 0 { break }
    bytes += buffer[0..<n]
  }
  return bytes
}
