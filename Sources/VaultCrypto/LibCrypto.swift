internal import CLibCrypto

/// The backend layer: the only code in VaultCrypto that calls libcrypto.
///
/// Every call checks the C return value (`rc == 1`, or non-NULL), frees what it
/// allocated before throwing, and turns failures into ``CryptoError``. The
/// public façade types validate their arguments and then call into here with
/// raw buffer pointers; no C type escapes this layer.
enum LibCrypto {
  /// Builds a ``CryptoError/libcrypto(function:reason:)`` from the first entry
  /// of this thread's libcrypto error queue, then clears the queue so a stale
  /// entry cannot be blamed on a later, unrelated call.
  static func error(_ function: String) -> CryptoError {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0 else {
      return .libcrypto(function: function, reason: "unknown error")
    }
    // ERR_error_string_n documents 256 bytes as always sufficient.
    let reason = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
      buffer.initialize(repeating: 0)
      ERR_error_string_n(code, buffer.baseAddress, buffer.count)
      let length = buffer.firstIndex(of: 0) ?? buffer.count
      return String(
        decoding: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[..<length]),
        as: UTF8.self)
    }
    return .libcrypto(function: function, reason: reason)
  }

  /// Throws the queued libcrypto error unless `rc == 1`.
  @inline(__always)
  static func check(_ rc: Int32, _ function: StaticString) throws(CryptoError) {
    guard rc == 1 else { throw error("\(function)") }
  }

  /// Converts a byte count to the `int` length many libcrypto calls take.
  static func int32Length(_ count: Int, _ what: String) throws(CryptoError) -> Int32 {
    guard let length = Int32(exactly: count) else {
      throw .invalidParameter("\(what) is too long (\(count) bytes)")
    }
    return length
  }

  /// Calls `body` with a non-NULL base address for `buffer`, even when it is
  /// empty (an empty Swift buffer may have a nil base address, which some
  /// libcrypto functions reject even with a zero length).
  @inline(__always)
  static func withNonNullBase(
    _ buffer: UnsafeRawBufferPointer,
    _ body: (UnsafePointer<UInt8>) throws(CryptoError) -> Void
  ) throws(CryptoError) {
    if let base = buffer.baseAddress {
      try body(base.assumingMemoryBound(to: UInt8.self))
      return
    }
    var placeholder: UInt8 = 0
    try withUnsafePointer(to: &placeholder) { (pointer) throws(CryptoError) in try body(pointer) }
  }
}
