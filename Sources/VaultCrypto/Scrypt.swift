/// The scrypt password-based key derivation function (RFC 7914), computed by libcrypto.
public enum Scrypt {
  /// The scrypt cost parameters.
  public struct Parameters: Sendable, Equatable, Codable {
    /// The CPU/memory cost `N`: a power of two greater than 1.
    public var n: UInt64
    /// The block size `r`: at least 1.
    public var r: UInt64
    /// The parallelisation `p`: at least 1.
    public var p: UInt64

    /// Creates a parameter set. Validity is checked when a key is derived.
    ///
    /// - Parameters:
    ///   - n: The CPU/memory cost `N`, a power of two greater than 1.
    ///   - r: The block size `r`, at least 1.
    ///   - p: The parallelisation `p`, at least 1.
    public init(n: UInt64, r: UInt64, p: UInt64) {
      self.n = n
      self.r = r
      self.p = p
    }

    /// The default for passphrases: `N = 2^17`, `r = 8`, `p = 1` (about 128 MiB).
    public static let `default` = Parameters(n: 1 << 17, r: 8, p: 1)

    /// The approximate working memory, `128 · r · N` bytes (saturating at
    /// `UInt64.max`). libcrypto needs slightly more, `128 · r · (N + p + 2)`;
    /// ``Scrypt/deriveKey(passphrase:salt:parameters:outputByteCount:)`` budgets for that.
    public var memoryByteCount: UInt64 {
      let (perBlock, overflow1) = r.multipliedReportingOverflow(by: 128)
      let (total, overflow2) = perBlock.multipliedReportingOverflow(by: n)
      return overflow1 || overflow2 ? UInt64.max : total
    }

    /// The exact byte budget libcrypto checks, or `nil` if it overflows.
    var requiredMemoryByteCount: UInt64? {
      let (blocks1, o1) = n.addingReportingOverflow(p)
      let (blocks, o2) = blocks1.addingReportingOverflow(2)
      let (perBlock, o3) = r.multipliedReportingOverflow(by: 128)
      let (total, o4) = perBlock.multipliedReportingOverflow(by: blocks)
      return o1 || o2 || o3 || o4 ? nil : total
    }
  }

  /// Derives a key from a passphrase with scrypt.
  ///
  /// This is deliberately slow and memory-hungry (``Parameters/default`` takes
  /// about 128 MiB); call it off latency-sensitive threads.
  ///
  /// - Parameters:
  ///   - passphrase: The passphrase bytes (for example its UTF-8 encoding); may be empty.
  ///   - salt: The salt; may be empty, but should be at least 16 random bytes.
  ///   - parameters: The cost parameters.
  ///   - outputByteCount: The length of the derived key in bytes, at least 1.
  /// - Returns: The derived key.
  /// - Throws: ``CryptoError/invalidParameter(_:)`` for invalid cost parameters
  ///   or output length, ``CryptoError/libcrypto(function:reason:)`` if
  ///   libcrypto fails (for example when the memory cannot be allocated).
  public static func deriveKey(
    passphrase: [UInt8],
    salt: [UInt8],
    parameters: Parameters,
    outputByteCount: Int
  ) throws -> SymmetricKey {
    guard parameters.n > 1, parameters.n & (parameters.n - 1) == 0 else {
      throw CryptoError.invalidParameter(
        "scrypt N = \(parameters.n) is not a power of two greater than 1")
    }
    guard parameters.r >= 1, parameters.p >= 1 else {
      throw CryptoError.invalidParameter(
        "scrypt r and p must be at least 1 (r = \(parameters.r), p = \(parameters.p))")
    }
    guard outputByteCount >= 1 else {
      throw CryptoError.invalidParameter(
        "scrypt output length \(outputByteCount) must be at least 1")
    }
    guard let required = parameters.requiredMemoryByteCount else {
      throw CryptoError.invalidParameter(
        "scrypt parameters N = \(parameters.n), r = \(parameters.r), p = \(parameters.p) overflow memory"
      )
    }
    // A little headroom over libcrypto's own accounting; 0 would mean "32 MiB default".
    let (maxMemory, overflow) = required.addingReportingOverflow(1 << 20)
    let storage = try SecureBytes(count: outputByteCount) { (output) in
      try passphrase.withUnsafeBytes { (pass) in
        try salt.withUnsafeBytes { (saltBytes) in
          try LibCrypto.scrypt(
            passphrase: pass, salt: saltBytes,
            n: parameters.n, r: parameters.r, p: parameters.p,
            maxMemory: overflow ? UInt64.max : maxMemory,
            output: output)
        }
      }
    }
    return SymmetricKey(storage: storage)
  }
}
