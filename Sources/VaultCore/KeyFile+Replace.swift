import Foundation
import VaultCrypto

extension KeyFile {
  /// Whether the key file at `path` is passphrase-protected (its header line says scrypt).
  /// - Throws: ``VaultError/keyFile(path:reason:)`` if it cannot be read.
  public static func isPassphraseProtected(at path: String) throws -> Bool {
    var protected = false
    _ = try? read(at: path) {
      protected = true
      return nil
    }
    if !protected { _ = try read(at: path) }
    return protected
  }

  /// Replaces the key file at `path` with a new encoding of `key`, atomically: the new text
  /// goes to `path.tmp-<pid>` (mode 0600, `O_EXCL`), is fsynced and renamed over `path`,
  /// then the directory is fsynced. A crash leaves the old file or the new one, whole.
  /// - Parameters:
  ///   - key: the master key to store.
  ///   - path: the key file to replace (or create).
  ///   - passphrase: protect the key with scrypt + ChaCha20-Poly1305 when given.
  ///   - parameters: scrypt cost.
  /// - Throws: ``VaultError/keyFile(path:reason:)``.
  public static func replace(
    _ key: MasterKey, at path: String, passphrase: [UInt8]? = nil,
    parameters: Scrypt.Parameters = .default
  ) throws {
    // A leftover of this pid's crashed attempt would make the O_EXCL create fail.
    _ = unlink(path + ".tmp-\(getpid())")
    let temp = try writeTemporary(
      try encode(key, passphrase: passphrase, parameters: parameters), for: path)
    guard rename(temp, path) == 0 else {
      let reason = String(cString: strerror(errno))
      _ = unlink(temp)
      throw VaultError.keyFile(path: path, reason: "could not replace it: \(reason)")
    }
    FileSystem.syncDirectory(FileSystem.parent(of: path))
  }

  /// Changes a key file's passphrase: reads the key with the old passphrase, then
  /// ``replace(_:at:passphrase:parameters:)`` with the new one. Only the key file changes;
  /// the master key, and so the vault, stay the same.
  /// - Parameters:
  ///   - path: the key file.
  ///   - oldPassphrase: called only if the file is protected now.
  ///   - newPassphrase: the new passphrase, or `nil` to store the key unprotected.
  ///   - parameters: scrypt cost for the new file (default N = 2^17, r = 8, p = 1).
  /// - Returns: the key (unchanged).
  /// - Throws: ``VaultError/keyFile(path:reason:)`` (wrong passphrase among them),
  ///   ``VaultError/passphraseRequired(path:)``.
  @discardableResult
  public static func changePassphrase(
    at path: String, oldPassphrase: () throws -> [UInt8]?, newPassphrase: [UInt8]?,
    parameters: Scrypt.Parameters = .default
  ) throws -> MasterKey {
    let key = try read(at: path, passphrase: oldPassphrase)
    try replace(key, at: path, passphrase: newPassphrase, parameters: parameters)
    return key
  }
}
