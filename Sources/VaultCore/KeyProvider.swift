import Foundation
import VaultCrypto

/// Where a vault's master key comes from: a key file, an environment variable, an app's
/// secure store (Keychain, Android Keystore through a bridge, a KMS), or a device secret
/// the key is derived from. The vault asks once per open and never writes the key.
///
/// ```swift
/// let provider = ClosureKeyProvider { _ in try MasterKey(key: SymmetricKey(bytes: keychain.load())) }
/// let vault = try Vault.open(at: path, keyProvider: provider)
/// ```
public protocol KeyProvider: Sendable {
  /// Returns the master key for the vault described by `context`.
  /// - Throws: anything; ``Vault/open(at:keyProvider:clock:)`` reports it as
  ///   ``VaultError/keyProvider(_:)`` (a ``VaultError`` passes through unchanged).
  func masterKey(for context: KeyContext) throws -> MasterKey
}

/// What a provider may use to choose or derive the key: the vault's directory and its
/// public per-vault salt (`settings.vaultID`, 16 random bytes drawn at creation).
public struct KeyContext: Sendable {
  /// The vault directory.
  public let directory: String
  /// The vault's public random id, the per-vault salt of ``DeviceBoundKeyProvider``.
  public let vaultID: [UInt8]
}

/// The master key from a key file (Keys/README.md), plain or passphrase-protected.
public struct KeyFileProvider: KeyProvider {
  /// The key file.
  public let path: String
  private let passphrase: @Sendable () throws -> [UInt8]?

  /// - Parameters:
  ///   - path: the key file.
  ///   - passphrase: asked only for a protected file; nil means none.
  public init(path: String, passphrase: @escaping @Sendable () throws -> [UInt8]? = { nil }) {
    self.path = path
    self.passphrase = passphrase
  }

  public func masterKey(for context: KeyContext) throws -> MasterKey {
    try KeyFile.read(at: path, passphrase: passphrase)
  }
}

/// The master key as 64 hex digits in an environment variable (CI, containers). The
/// variable is read at each open and never copied anywhere.
public struct EnvironmentKeyProvider: KeyProvider {
  /// The variable's name.
  public let variable: String
  private let environment: @Sendable () -> [String: String]

  /// - Parameters:
  ///   - variable: e.g. `VAULT_MASTER_KEY`.
  ///   - environment: where variables are looked up (default: this process's environment).
  ///     Tests pass their own instead of calling `setenv`, which races every thread that
  ///     reads the environment (a `Process` being spawned, say).
  public init(
    variable: String,
    environment: @escaping @Sendable () -> [String: String] = {
      ProcessInfo.processInfo.environment
    }
  ) {
    self.variable = variable
    self.environment = environment
  }

  public func masterKey(for context: KeyContext) throws -> MasterKey {
    guard let value = environment()[variable], !value.isEmpty else {
      throw VaultError.keyProvider("environment variable \(variable) is not set")
    }
    var trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
    if trimmed.hasPrefix("0x") { trimmed.removeFirst(2) }
    guard var bytes = Bytes.fromHex(trimmed.lowercased()), bytes.count == 32 else {
      throw VaultError.keyProvider("environment variable \(variable) is not 64 hex digits")
    }
    defer { for i in bytes.indices { bytes[i] = 0 } }
    return try MasterKey(key: SymmetricKey(bytes: bytes))
  }
}

/// The master key from your own code: a Keychain item, an Android Keystore bridge, a KMS.
public struct ClosureKeyProvider: KeyProvider {
  private let body: @Sendable (KeyContext) throws -> MasterKey

  /// - Parameter body: returns the key; may throw (the store is locked, the user cancelled).
  public init(_ body: @escaping @Sendable (KeyContext) throws -> MasterKey) { self.body = body }

  public func masterKey(for context: KeyContext) throws -> MasterKey { try body(context) }
}

/// Device-bound mode: the master key is `HKDF(secret, salt = vaultID, info = "vault v1
/// device key", 32)`, where `secret` comes from another provider that never leaves the
/// device (a non-exportable Keychain/Keystore item). A vault directory copied to another
/// device, whose secret differs, opens nothing there (`wrongKey`); each vault on one
/// device gets its own master key.
public struct DeviceBoundKeyProvider: KeyProvider {
  private let secret: @Sendable () throws -> SymmetricKey

  /// - Parameter secret: the device secret, at least 32 bytes of key material.
  public init(secret: @escaping @Sendable () throws -> SymmetricKey) { self.secret = secret }

  public func masterKey(for context: KeyContext) throws -> MasterKey {
    let material = try secret()
    guard material.byteCount >= 32 else {
      throw VaultError.keyProvider(
        "the device secret has \(material.byteCount) bytes; at least 32 are needed")
    }
    return try MasterKey(
      key: cryptoCall {
        try HKDFSHA256.deriveKey(
          inputKeyMaterial: material, salt: context.vaultID,
          info: Array(VaultFormat.labelDeviceKey.utf8), outputByteCount: 32)
      })
  }
}
