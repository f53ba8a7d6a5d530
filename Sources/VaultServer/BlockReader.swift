import NIOCore
import VaultCore

/// Decrypts blocks of one asset into ByteBuffers on the thread pool.
///
/// `@unchecked Sendable`: the `AssetReader` inside is not thread-safe, and it does not need
/// to be: one response owns it and awaits each block before asking for the next, so at most
/// one pool thread touches it at a time.
final class BlockReader: @unchecked Sendable {
  private let reader: AssetReader
  private let allocator = ByteBufferAllocator()

  init(_ reader: AssetReader) { self.reader = reader }

  /// Bytes `offset ..< offset+count`, decrypted straight into the buffer that will be
  /// written to the socket (no intermediate array).
  func block(offset: UInt64, count: Int) throws -> ByteBuffer {
    var buffer = allocator.buffer(capacity: count)
    try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { memory in
      try reader.read(
        offset: offset, into: UnsafeMutableRawBufferPointer(rebasing: memory[0..<count]))
      return count
    }
    return buffer
  }
}
