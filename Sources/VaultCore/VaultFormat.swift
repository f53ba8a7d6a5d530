/// Constants of the on-disk format, version 1. docs/FORMAT.md is the prose version of this
/// file; change neither without the other, and never change a shipped value without a
/// format version bump and a reader for the old one.
public enum VaultFormat {
  /// The format version written by this build and bound into every chunk's AAD.
  public static let version: UInt16 = 1
  /// `settings.formatVersion` while a rotated-out master key is still decrypt-only. Chunks,
  /// headers and labels stay version 1; the higher index version only makes builds that
  /// predate key rotation (they accept `formatVersion <= 1`) refuse the vault instead of
  /// wrapping new data keys under a key that is about to be retired (FORMAT.md §11).
  public static let indexVersionKeysPending = 2
  /// The highest `settings.formatVersion` this build opens.
  public static let maximumIndexVersion = 2
  /// Lock file that serialises key operations (rotate, re-encrypt, retire) on one vault.
  static let keyLockFileName = "KEYS.lock"
  /// Name of the marker file at the top of a vault directory.
  static let markerFileName = "VAULT"
  /// Contents of the marker file (first line is checked).
  static let markerFirstLine = "encrypted media vault"
  /// Name of the SQLite index.
  static let indexFileName = "index.sqlite"
  /// Directory holding the sealed asset files.
  static let chunksDirectoryName = "chunks"

  /// Default plaintext chunk size (64 KiB).
  public static let defaultChunkSize = 65_536
  /// Smallest allowed chunk size (16 KiB).
  public static let minimumChunkSize = 16_384
  /// Largest allowed chunk size (1 MiB).
  public static let maximumChunkSize = 1_048_576

  /// Magic bytes at the start of every asset file.
  static let assetMagic: [UInt8] = Array("VLTASSET".utf8)
  /// Length of the authenticated asset header that precedes the chunk slots.
  static let headerLength = 128
  /// Per-slot overhead: nonce (12) + tag (16).
  static let slotOverhead = 28
  /// Header value for "total length not known when the header was written" (stdin import).
  static let unknownLength = UInt64.max
  /// Seals allowed under one chunk key; past it the asset needs a new generation.
  /// 2^28 random 96-bit nonces collide with probability below 2^-41 (see FORMAT.md).
  public static let sealLimit: Int64 = 1 << 28
  /// Seconds within which one process writes an asset's last-access time once (LRU order
  /// is exact to this resolution; a player's many range reads cost one index write).
  public static let accessResolution: Double = 10

  // Domain-separation labels (HKDF info / HMAC messages / AAD prefixes).
  static let labelKeyID = "vault v1 key id"
  static let labelWrap = "vault v1 wrap"
  static let labelCommit = "vault v1 commit"
  static let commitMessage = "vault v1 key commitment"
  static let labelNamingKeyAAD = "vault v1 naming key"
  static let labelDataKeyAAD = "vault v1 data key"
  static let labelAssetID = "vault v1 asset id"
  static let labelChunkKey = "vault v1 chunk key"
  static let labelHeaderKey = "vault v1 header key"
  static let labelMetaKey = "vault v1 meta key"
  static let labelMetaAAD = "vault v1 meta"
  static let labelValidator = "vault v1 validator"
  /// HKDF info deriving the config key from the naming key (sealed `config` rows).
  static let labelConfigKey = "vault v1 config key"
  /// AAD prefix of a sealed `config` value: `label ‖ 0x00 ‖ key name`.
  static let labelConfigAAD = "vault v1 config"
  static let chunkAADMagic: [UInt8] = Array("VCHK".utf8)
  /// HKDF info deriving the lease key from the naming key (MACs of `lease` rows).
  static let labelLeaseKey = "vault v1 lease key"
  /// HMAC message prefix of a lease row: `label ‖ 0x00 ‖ asset id ‖ fields` (FORMAT.md §5).
  static let labelLeaseMAC = "vault v1 lease"
  /// HKDF info deriving a device-bound master key from a device secret (salt: vaultID).
  static let labelDeviceKey = "vault v1 device key"

  /// Reads that start a play within this many seconds of the last counted play are the
  /// same play (a player's probe, open-ended read and seeks back to the start).
  public static let playCoalescing: Double = 60
  /// How long the last play a lease allows may go on (seeks, resumes) before the lease
  /// counts as exhausted.
  public static let lastPlayGrace: Double = 6 * 3600
  /// Seconds a process reuses a lease row it read for checks that change nothing (seeks
  /// within a play, reads of an unleased asset). Expiry is still judged at each check's
  /// time; only changes made by other processes are seen up to this much later.
  public static let leaseCheckReuse: Double = 1

  /// Whether `size` is an allowed chunk size.
  public static func isValidChunkSize(_ size: Int) -> Bool {
    size >= minimumChunkSize && size <= maximumChunkSize && size & (size - 1) == 0
  }
}
