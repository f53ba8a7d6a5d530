import Foundation
import VaultCrypto

/// Reads and writes master key files (format in Keys/README.md).
///
/// Plain:
/// ```
/// vault-key 1
/// id 0123456789abcdef
/// key <base64 of 32 bytes>
/// ```
/// Passphrase-protected (scrypt, then ChaCha20-Poly1305):
/// ```
/// vault-key 1 scrypt
/// id 0123456789abcdef
/// scrypt 131072 8 1
/// salt <base64 of 16 bytes>
/// sealed <base64 of nonce(12) ‖ ciphertext(32) ‖ tag(16)>
/// ```
/// Lines starting with `#` and blank lines are ignored. The sealed key's AAD is
/// `"vault-key 1 scrypt" ‖ 0x00 ‖ id`.
public enum KeyFile {
  static let plainHeader = "vault-key 1"
  static let scryptHeader = "vault-key 1 scrypt"

  /// Reads a key file.
  /// - Parameters:
  ///   - path: the key file.
  ///   - passphrase: called only if the file is passphrase-protected.
  /// - Returns: the master key, whose id was checked against the file's `id` line.
  /// - Throws: ``VaultError/keyFile(path:reason:)``, ``VaultError/passphraseRequired(path:)``.
  public static func read(at path: String, passphrase: () throws -> [UInt8]? = { nil }) throws
    -> MasterKey
  {
    guard FileSystem.exists(path) else { throw VaultError.keyFile(path: path, reason: "not found") }
    var bytes: [UInt8]
    do {
      bytes = try readSmallFile(path, limit: 16 << 10)
    } catch VaultError.io(_, _, let code) {
      throw VaultError.keyFile(path: path, reason: String(cString: strerror(code)))
    }
    defer { SecureMemory.cleanse(&bytes) }
    var fields: [String: String] = [:]
    var header: String?
    for line in String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline) {
      let trimmed = line.trimmingCharacters(in: .whitespaces)
      if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
      if header == nil {
        header = trimmed
        continue
      }
      let parts = trimmed.split(separator: " ", maxSplits: 1)
      guard parts.count == 2 else {
        throw VaultError.keyFile(path: path, reason: "malformed line '\(parts.first ?? "")'")
      }
      fields[String(parts[0])] = String(parts[1])
    }
    func field(_ name: String) throws -> String {
      guard let value = fields[name] else {
        throw VaultError.keyFile(path: path, reason: "missing '\(name)' line")
      }
      return value
    }
    func base64(_ name: String) throws -> [UInt8] {
      guard let data = Data(base64Encoded: try field(name)) else {
        throw VaultError.keyFile(path: path, reason: "'\(name)' is not base64")
      }
      return Array(data)
    }
    let key: MasterKey
    switch header {
    case plainHeader:
      var raw = try base64("key")
      defer { SecureMemory.cleanse(&raw) }
      guard raw.count == 32 else {
        throw VaultError.keyFile(path: path, reason: "key must be 32 bytes, found \(raw.count)")
      }
      key = try MasterKey(key: SymmetricKey(bytes: raw))
    case scryptHeader:
      let numbers = try field("scrypt").split(separator: " ").compactMap { UInt64($0) }
      guard numbers.count == 3 else {
        throw VaultError.keyFile(path: path, reason: "'scrypt' needs N r p")
      }
      let parameters = Scrypt.Parameters(n: numbers[0], r: numbers[1], p: numbers[2])
      // A hostile key file must not make us allocate gigabytes: 2^20 × 8 × 128 = 1 GiB max.
      guard parameters.n <= 1 << 20, parameters.r <= 16, parameters.p <= 16,
        parameters.memoryByteCount <= 1 << 30
      else {
        throw VaultError.keyFile(path: path, reason: "scrypt parameters are too large")
      }
      let salt = try base64("salt")
      let sealed = try base64("sealed")
      let id = try field("id")
      guard var secret = try passphrase() else { throw VaultError.passphraseRequired(path: path) }
      defer { SecureMemory.cleanse(&secret) }
      let kek: SymmetricKey
      do {
        kek = try Scrypt.deriveKey(
          passphrase: secret, salt: salt, parameters: parameters, outputByteCount: 32)
      } catch {
        throw VaultError.keyFile(path: path, reason: "scrypt failed: \(error)")
      }
      do {
        key = try MasterKey(key: ChaChaPoly.openKey(sealed, key: kek, aad: scryptAAD(id: id)))
      } catch {
        throw VaultError.keyFile(path: path, reason: "wrong passphrase")
      }
    default:
      throw VaultError.keyFile(path: path, reason: "not a vault key file")
    }
    let id = try field("id")
    guard id == key.keyID else {
      throw VaultError.keyFile(
        path: path, reason: "its id line says \(id) but the key's id is \(key.keyID)")
    }
    return key
  }

  /// Writes a key file with mode 0600. Never replaces an existing file: the file is written
  /// under a temporary name, synced, then hard-linked into place (which fails if it exists).
  /// - Parameters:
  ///   - key: the master key.
  ///   - path: destination.
  ///   - passphrase: protect the key with scrypt + ChaCha20-Poly1305 when given.
  ///   - parameters: scrypt cost.
  /// - Throws: ``VaultError/keyFile(path:reason:)`` if the file exists or cannot be written.
  public static func write(
    _ key: MasterKey, to path: String, passphrase: [UInt8]? = nil,
    parameters: Scrypt.Parameters = .default
  ) throws {
    guard !FileSystem.exists(path) else {
      throw VaultError.keyFile(path: path, reason: "already exists; refusing to overwrite it")
    }
    let temp = try writeTemporary(
      try encode(key, passphrase: passphrase, parameters: parameters), for: path)
    defer { _ = unlink(temp) }
    guard link(temp, path) == 0 else {
      let reason =
        errno == EEXIST
        ? "already exists; refusing to overwrite it" : String(cString: strerror(errno))
      throw VaultError.keyFile(path: path, reason: reason)
    }
    FileSystem.syncDirectory(FileSystem.parent(of: path))
  }

  /// Writes `bytes` (then wipes them) to a new `path.tmp-<pid>` (mode 0600, `O_EXCL`) and
  /// fsyncs it; the caller links or renames it into place.
  /// - Returns: the temporary file's path.
  static func writeTemporary(_ bytes: [UInt8], for path: String) throws -> String {
    var bytes = bytes
    defer { SecureMemory.cleanse(&bytes) }
    let temp = path + ".tmp-\(getpid())"
    let fd = posixOpen(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      throw VaultError.keyFile(path: path, reason: String(cString: strerror(errno)))
    }
    let written = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
    let synced = fsync(fd) == 0
    _ = close(fd)
    guard written == bytes.count, synced else {
      _ = unlink(temp)
      throw VaultError.keyFile(path: path, reason: "could not write it")
    }
    return temp
  }

  /// The text of a key file for `key`, scrypt-protected when `passphrase` is given.
  static func encode(_ key: MasterKey, passphrase: [UInt8]?, parameters: Scrypt.Parameters)
    throws -> [UInt8]
  {
    var text = "# vault master key: keep it secret, keep a backup. Format: Keys/README.md\n"
    if let passphrase {
      let salt = try cryptoCall { try SecureRandom.bytes(count: 16) }
      let kek = try cryptoCall {
        try Scrypt.deriveKey(
          passphrase: passphrase, salt: salt, parameters: parameters, outputByteCount: 32)
      }
      let sealed = try cryptoCall {
        try ChaChaPoly.sealKey(key.key, key: kek, aad: scryptAAD(id: key.keyID))
      }
      text += "\(scryptHeader)\nid \(key.keyID)\n"
      text += "scrypt \(parameters.n) \(parameters.r) \(parameters.p)\n"
      text +=
        "salt \(Data(salt).base64EncodedString())\nsealed \(Data(sealed).base64EncodedString())\n"
    } else {
      let encoded = key.key.withUnsafeBytes { Data($0).base64EncodedString() }
      text += "\(plainHeader)\nid \(key.keyID)\nkey \(encoded)\n"
    }
    return Array(text.utf8)
  }

  static func scryptAAD(id: String) -> [UInt8] {
    Array(scryptHeader.utf8) + [0] + Array(id.utf8)
  }
}
