/// Heap storage for secret bytes (keys), wiped with `OPENSSL_cleanse` when freed.
///
/// The bytes are written once, inside `init`, and never change afterwards; the
/// class exposes read-only access only. That immutability is why it is
/// `@unchecked Sendable`: concurrent readers of memory nobody writes to cannot
/// race, and the buffer is freed only in `deinit`, when no reference is left.
final class SecureBytes: @unchecked Sendable {
  private let buffer: UnsafeMutableRawBufferPointer

  /// Allocates `count` zeroed bytes and lets `initializer` fill them.
  ///
  /// If `initializer` throws, the memory is cleansed and freed before the error
  /// propagates, so partially written secrets never linger.
  init<E: Error>(
    count: Int,
    initializer: (UnsafeMutableRawBufferPointer) throws(E) -> Void
  ) throws(E) {
    let buffer = UnsafeMutableRawBufferPointer.allocate(
      byteCount: max(count, 0),
      alignment: MemoryLayout<UInt64>.alignment
    )
    buffer.initializeMemory(as: UInt8.self, repeating: 0)
    do {
      try initializer(buffer)
    } catch {
      LibCrypto.cleanse(buffer)
      buffer.deallocate()
      throw error
    }
    self.buffer = buffer
  }

  /// Copies `bytes` into fresh storage without going through an intermediate array.
  convenience init(copying bytes: some Collection<UInt8>) {
    let count = bytes.count
    self.init(count: count) { (buffer) throws(Never) in
      if bytes.withContiguousStorageIfAvailable({
        buffer.copyMemory(from: UnsafeRawBufferPointer($0))
      }) == nil {
        var index = 0
        for byte in bytes where index < count {
          buffer[index] = byte
          index += 1
        }
      }
    }
  }

  deinit {
    LibCrypto.cleanse(buffer)
    buffer.deallocate()
  }

  /// The number of bytes stored.
  var count: Int { buffer.count }

  /// Calls `body` with read-only access to the bytes.
  func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R
  {
    try body(UnsafeRawBufferPointer(buffer))
  }
}
