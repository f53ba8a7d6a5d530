import VaultCrypto

/// The two working buffers of a batch: plaintext and sealed slots, allocated once per
/// reader or writer, so memory stays at two batches whatever the asset size. The plaintext
/// buffer is cleansed when released.
final class ChunkBuffers {
  let plaintext: UnsafeMutableRawBufferPointer
  let slots: UnsafeMutableRawBufferPointer
  let chunksPerBatch: Int

  /// About 4 MiB of plaintext per batch, at least one chunk per worker.
  init(chunkSize: Int, workers: Int) {
    chunksPerBatch = max(workers, min(64, (4 << 20) / chunkSize))
    plaintext = .allocate(byteCount: chunksPerBatch * chunkSize, alignment: 64)
    slots = .allocate(
      byteCount: chunksPerBatch * (chunkSize + VaultFormat.slotOverhead), alignment: 64)
  }

  deinit {
    SecureMemory.cleanse(plaintext)
    plaintext.deallocate()
    slots.deallocate()
  }
}
