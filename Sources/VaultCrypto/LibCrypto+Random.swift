internal import CLibCrypto

extension LibCrypto {
  /// Fills `buffer` from libcrypto's CSPRNG (`RAND_bytes`, checked `== 1`).
  static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) throws(CryptoError) {
    guard let base = buffer.baseAddress else { return }
    var offset = 0
    while offset < buffer.count {
      let length = min(buffer.count - offset, 1 << 30)
      let rc = RAND_bytes(
        base.advanced(by: offset).assumingMemoryBound(to: UInt8.self), Int32(length))
      guard rc == 1 else {
        ERR_clear_error()
        throw .randomFailed
      }
      offset += length
    }
  }
}
