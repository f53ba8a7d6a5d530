import Foundation
import VaultCrypto

extension Vault {
  /// Creates a vault whose master key comes from `keyProvider`, asked with the new vault's
  /// id (so a ``DeviceBoundKeyProvider`` derives a key of its own for this vault).
  /// - Throws: as ``create(at:masterKey:chunkSize:clock:)``, and
  ///   ``VaultError/keyProvider(_:)`` if the provider fails.
  public static func create(
    at directory: String, keyProvider: any KeyProvider,
    chunkSize: Int = VaultFormat.defaultChunkSize, clock: VaultClock = .system
  ) throws -> Vault {
    try checkCanCreate(at: directory)
    let vaultID = try cryptoCall { try SecureRandom.bytes(count: 16) }
    let key = try ask(keyProvider, KeyContext(directory: directory, vaultID: vaultID))
    return try create(
      at: directory, masterKey: key, chunkSize: chunkSize, clock: clock, vaultID: vaultID)
  }

  /// Opens a vault with the master key from `keyProvider`. The provider sees the vault's
  /// public id first; the key it returns is then checked like any other (id, commitment).
  /// - Throws: ``VaultError/keyProvider(_:)`` if the provider fails;
  ///   ``VaultError/wrongKey(expectedKeyIDs:actualKeyID:)`` if its key is not this vault's.
  public static func open(
    at directory: String, keyProvider: any KeyProvider, clock: VaultClock = .system
  ) throws -> Vault {
    let vaultID = try publicVaultID(at: directory)
    let key = try ask(keyProvider, KeyContext(directory: directory, vaultID: vaultID))
    return try open(at: directory, masterKey: key, clock: clock)
  }

  private static func ask(_ provider: any KeyProvider, _ context: KeyContext) throws
    -> MasterKey
  {
    do {
      return try provider.masterKey(for: context)
    } catch let error as VaultError {
      throw error
    } catch {
      throw VaultError.keyProvider("\(error)")
    }
  }
}
