import Foundation
import GRDB
import VaultCrypto

extension Vault {
  /// Rotates the master key: `newKey` becomes the active key, and the naming key and every
  /// asset's data key are rewrapped under it in **one** index transaction. No chunk is read
  /// or written, so the cost grows with the number of assets, not their bytes; asset ids do
  /// not change.
  ///
  /// Unless `retireOld` is set, the key this vault was opened with stays **decrypt-only**:
  /// its `masterKey` row is kept and a copy of every data key wrapped under it moves to the
  /// `assetKey` table, so it still opens the vault (reads, exports, verify) until
  /// ``retireKey(_:)``; it can no longer store anything. A crash leaves either the old state
  /// or the new one (SQLite rolls the transaction back or keeps it whole).
  ///
  /// Calling it again with a `newKey` that is already active does nothing but open it (and
  /// retire the old key if asked), so a caller can simply retry after a crash.
  /// - Parameters:
  ///   - newKey: the new master key (e.g. from the app's keychain); must be new to the vault.
  ///   - retireOld: retire the key this vault was opened with in the same transaction.
  /// - Returns: the vault opened with `newKey`. This instance is decrypt-only afterwards.
  /// - Throws: ``VaultError/keyOperationBusy(path:)`` if another key operation runs,
  ///   ``VaultError/keyDecryptOnly(keyID:activeKeyID:)`` if this vault was not opened with
  ///   the active key, ``VaultError/invalidArgument(_:)`` if `newKey` is already known,
  ///   ``VaultError/assetDamaged(asset:reason:)`` if a wrapped key fails to open (nothing
  ///   is changed then).
  public func rotateMasterKey(to newKey: MasterKey, retireOld: Bool = false) throws -> Vault {
    try withKeyOperationLock {
      let oldKeyID = masterKey.keyID
      let settings = try index.settings()
      if settings.activeKeyID == newKey.keyID {
        if retireOld && oldKeyID != newKey.keyID { try retireLocked(oldKeyID) }
        return try Vault.open(at: directory, masterKey: newKey)
      }
      guard settings.activeKeyID == oldKeyID else {
        throw VaultError.keyDecryptOnly(keyID: oldKeyID, activeKeyID: settings.activeKeyID)
      }
      guard try !index.masterKeys().contains(where: { $0.keyID == newKey.keyID }) else {
        throw VaultError.invalidArgument(
          "key \(newKey.keyID) is already known to this vault; rotate to a new key")
      }
      let newWrappingKey = try newKey.wrappingKey(vaultID: vaultID)
      let newRecord = MasterKeyRecord(
        keyID: newKey.keyID, commitment: Data(try newKey.commitment(vaultID: vaultID)),
        wrappedNamingKey: Data(
          try cryptoCall {
            try ChaChaPoly.sealKey(
              namingKey, key: newWrappingKey,
              aad: Vault.namingKeyAAD(vaultID: vaultID, keyID: newKey.keyID))
          }),
        state: MasterKeyState.active, createdAt: Date().timeIntervalSince1970)
      try index.writeTransaction { db in
        try VaultIndex.requireActive(db, keyID: oldKeyID)
        try newRecord.insert(db)
        if retireOld {
          try db.execute(sql: "DELETE FROM masterKey WHERE keyID = ?", arguments: [oldKeyID])
          try db.execute(sql: "DELETE FROM assetKey WHERE keyID = ?", arguments: [oldKeyID])
        } else {
          try db.execute(
            sql: "UPDATE masterKey SET state = ? WHERE keyID = ?",
            arguments: [MasterKeyState.decryptOnly, oldKeyID])
          // The old key keeps a copy of every data key, so it can still decrypt.
          try db.execute(
            sql: """
              INSERT INTO assetKey (assetID, generation, keyID, wrappedKey)
              SELECT id, generation, keyID, wrappedKey FROM asset
              """)
        }
        try rewrapAll(db, from: oldKeyID, to: newKey.keyID, newWrappingKey: newWrappingKey)
        try Self.updateSettings(db, activeKeyID: newKey.keyID)
      }
      CrashPoint.reach("rotate-after-commit")
      if retireOld { try? index.checkpoint() }
      return try Vault.open(at: directory, masterKey: newKey)
    }
  }

  /// Retires a decrypt-only master key: its `masterKey` row and every data key copy wrapped
  /// under it are deleted in one transaction (`secure_delete` overwrites them), then the WAL
  /// is checkpointed. From then on the key opens nothing in this vault.
  /// - Parameter keyID: the key to retire (16 hex digits).
  /// - Throws: ``VaultError/invalidArgument(_:)`` if it is the active key or unknown,
  ///   ``VaultError/keyOperationBusy(path:)``.
  public func retireKey(_ keyID: String) throws {
    try withKeyOperationLock { try retireLocked(keyID) }
  }

  /// Retires every decrypt-only key.
  /// - Returns: the ids retired.
  @discardableResult
  public func retireDecryptOnlyKeys() throws -> [String] {
    try withKeyOperationLock {
      let ids = try index.masterKeys().filter { $0.state != MasterKeyState.active }.map(\.keyID)
      for id in ids { try retireLocked(id) }
      return ids.sorted()
    }
  }

  private func retireLocked(_ keyID: String) throws {
    try index.writeTransaction { db in
      guard let settings = try SettingsRecord.fetchOne(db) else {
        throw VaultError.indexDamaged(reason: "settings are missing")
      }
      guard keyID != settings.activeKeyID else {
        throw VaultError.invalidArgument(
          "key \(keyID) is the active key: rotate to a new key before retiring it")
      }
      guard try MasterKeyRecord.fetchOne(db, key: keyID) != nil else {
        throw VaultError.invalidArgument("key \(keyID) is not known to this vault")
      }
      let stranded =
        try Int.fetchOne(
          db, sql: "SELECT COUNT(*) FROM asset WHERE keyID = ?", arguments: [keyID]) ?? 0
      guard stranded == 0 else {
        throw VaultError.invalidArgument(
          "\(stranded) assets are wrapped only under key \(keyID); it cannot be retired")
      }
      try db.execute(sql: "DELETE FROM assetKey WHERE keyID = ?", arguments: [keyID])
      try db.execute(sql: "DELETE FROM masterKey WHERE keyID = ?", arguments: [keyID])
      try Self.updateSettings(db, activeKeyID: settings.activeKeyID)
    }
    CrashPoint.reach("retire-after-commit")
    try? index.checkpoint()
  }

  /// Rewraps every asset's data key from the old wrapping key to the new one.
  private func rewrapAll(
    _ db: Database, from oldKeyID: String, to newKeyID: String, newWrappingKey: SymmetricKey
  ) throws {
    // Read everything first: updating rows under an open cursor on the same table is not safe.
    let rows = try Row.fetchAll(db, sql: "SELECT id, generation, keyID, wrappedKey FROM asset")
    let update = try db.makeStatement(
      sql: "UPDATE asset SET keyID = ?, wrappedKey = ? WHERE id = ?")
    for row in rows {
      let idBytes: Data = row["id"]
      let generation: Int64 = row["generation"]
      let keyID: String = row["keyID"]
      let wrapped: Data = row["wrappedKey"]
      let id = AssetID(bytes: Array(idBytes))
      guard keyID == oldKeyID else {
        throw VaultError.indexDamaged(
          reason: "asset \(id.short) is wrapped under key \(keyID), not the active key")
      }
      let dataKey: SymmetricKey
      do {
        dataKey = try ChaChaPoly.openKey(
          Array(wrapped), key: wrappingKey,
          aad: AssetKeys.wrapAAD(assetID: id, generation: UInt64(generation), keyID: oldKeyID))
      } catch {
        throw VaultError.assetDamaged(
          asset: id.short, reason: "its key record failed authentication")
      }
      let rewrapped = try cryptoCall {
        try ChaChaPoly.sealKey(
          dataKey, key: newWrappingKey,
          aad: AssetKeys.wrapAAD(assetID: id, generation: UInt64(generation), keyID: newKeyID))
      }
      try update.execute(arguments: [newKeyID, Data(rewrapped), idBytes])
    }
  }

  /// Records the active key and the index version: 2 while any decrypt-only key remains
  /// (builds that predate rotation refuse it), else 1.
  private static func updateSettings(_ db: Database, activeKeyID: String) throws {
    let pending =
      try Int.fetchOne(
        db, sql: "SELECT COUNT(*) FROM masterKey WHERE state != ?",
        arguments: [MasterKeyState.active]) ?? 0
    let version = pending > 0 ? VaultFormat.indexVersionKeysPending : Int(VaultFormat.version)
    try db.execute(
      sql: "UPDATE settings SET activeKeyID = ?, formatVersion = ?",
      arguments: [activeKeyID, version])
  }
}
