import Foundation

/// Every error the vault reports. Each case renders as one human line (``description``),
/// which the CLI prints as-is; lower-layer errors (crypto, SQLite, POSIX) are wrapped.
public enum VaultError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The directory is not a vault (no `VAULT` marker file).
  case notAVault(path: String)
  /// `init` found an existing vault or a non-empty directory.
  case alreadyExists(path: String)
  /// The vault was written by a newer format version this build cannot read.
  case unsupportedFormat(version: Int)
  /// The key does not open this vault (checked by key id and commitment before any AEAD open).
  case wrongKey(expectedKeyIDs: [String], actualKeyID: String)
  /// A key file is missing, malformed or has the wrong passphrase.
  case keyFile(path: String, reason: String)
  /// A passphrase was needed but none was given.
  case passphraseRequired(path: String)
  /// No asset matches the given name or id.
  case unknownAsset(String)
  /// More than one asset matches an id prefix.
  case ambiguousAsset(String)
  /// An asset with this identity already exists.
  case duplicateAsset(String)
  /// The requested byte range lies outside the asset.
  case rangeNotSatisfiable(offset: UInt64, length: UInt64, assetLength: UInt64)
  /// A chunk the range needs is not stored (partial asset); the range is named.
  case chunkMissing(asset: String, index: Int)
  /// A stored chunk failed authentication or could not be read: never passed on.
  case chunkDamaged(asset: String, index: Int, reason: String)
  /// The asset's header or key record failed authentication or does not match the index.
  case assetDamaged(asset: String, reason: String)
  /// The index is corrupt or unreadable.
  case indexDamaged(reason: String)
  /// Another writer holds this asset.
  case assetBusy(String)
  /// A chunk size outside 16 KiB...1 MiB or not a power of two.
  case invalidChunkSize(Int)
  /// A caller-supplied argument is invalid.
  case invalidArgument(String)
  /// The input changed size while it was being imported.
  case inputChanged(path: String)
  /// Too many seals under one data key: the asset needs a new generation.
  case sealLimitReached(asset: String)
  /// An operating-system call failed (open, read, write, fsync, rename...).
  case io(operation: String, path: String, errno: Int32)
  /// A cryptographic primitive failed for a reason other than authentication.
  case crypto(String)
  /// Another key operation (rotation, re-encryption, retirement) holds the vault's key lock.
  case keyOperationBusy(path: String)
  /// The vault was opened with a rotated-out key that may only decrypt; the operation needs
  /// the active key.
  case keyDecryptOnly(keyID: String, activeKeyID: String)
  /// The asset's lease refuses the read: expired, play window closed, plays used up, or
  /// its record was tampered with. An expired asset's key is destroyed when this is found.
  case leaseExpired(asset: String, denial: LeaseDenial)
  /// The key provider could not supply a master key (store locked, variable unset...).
  case keyProvider(String)

  public var description: String {
    switch self {
    case .notAVault(let path):
      return "not a vault: \(path) (create one with `vault init`)"
    case .alreadyExists(let path):
      return "a vault or other files already exist at \(path)"
    case .unsupportedFormat(let version):
      return
        "vault format \(version) is newer than this build understands (max \(VaultFormat.maximumIndexVersion))"
    case .wrongKey(let expected, let actual):
      let list = expected.joined(separator: ", ")
      return "wrong key: this vault was sealed with key id \(list), the key given has id \(actual)"
    case .keyFile(let path, let reason):
      return "key file \(path): \(reason)"
    case .passphraseRequired(let path):
      return "key file \(path) is passphrase-protected: give --passphrase-file or VAULT_PASSPHRASE"
    case .unknownAsset(let name):
      return "no asset named or with id \(name)"
    case .ambiguousAsset(let prefix):
      return "id prefix \(prefix) matches more than one asset; give more characters"
    case .duplicateAsset(let name):
      return "an asset with id \(name) already exists (remove it first or pick another --id)"
    case .rangeNotSatisfiable(let offset, let length, let assetLength):
      return "range \(offset)+\(length) is outside the asset (length \(assetLength))"
    case .chunkMissing(let asset, let index):
      return "asset \(asset): chunk \(index) is not stored"
    case .chunkDamaged(let asset, let index, let reason):
      return "asset \(asset): chunk \(index) is damaged (\(reason)); refused"
    case .assetDamaged(let asset, let reason):
      return "asset \(asset) is damaged: \(reason)"
    case .indexDamaged(let reason):
      return "the vault index is damaged: \(reason)"
    case .assetBusy(let asset):
      return "asset \(asset) is being written by another process"
    case .invalidChunkSize(let size):
      return "chunk size \(size) is invalid: use a power of two from 16KiB to 1MiB"
    case .invalidArgument(let reason):
      return reason
    case .inputChanged(let path):
      return "\(path) changed size while it was being imported; nothing was stored"
    case .sealLimitReached(let asset):
      return "asset \(asset) reached the seal limit of its data key; re-encrypt it"
    case .io(let operation, let path, let code):
      return "\(operation) \(path): \(String(cString: strerror(code)))"
    case .crypto(let reason):
      return "cryptographic failure: \(reason)"
    case .keyOperationBusy(let path):
      return "another key operation is running on this vault (\(path) is locked); try again later"
    case .keyDecryptOnly(let keyID, let activeKeyID):
      return
        "key \(keyID) was rotated out and may only decrypt: use the active key \(activeKeyID)"
    case .leaseExpired(let asset, let denial):
      return "asset \(asset) is not playable: \(denial)"
    case .keyProvider(let reason):
      return "the key provider failed: \(reason)"
    }
  }
}
