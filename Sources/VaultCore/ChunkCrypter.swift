import Dispatch
import Foundation
import VaultCrypto

/// Seals and opens batches of consecutive chunks on several cores: one ChaCha20-Poly1305
/// context per worker (never one per chunk), workers take interleaved chunks of a batch.
///
/// Batch layout: plaintext chunk k at `k × chunkSize`; sealed slot k at `k × slotSize`.
/// Not thread-safe: one crypter per reader or writer.
final class ChunkCrypter {
  let chunkSize: Int
  let headerMAC: [UInt8]
  private let contexts: [ChaChaPoly.Context]

  var workers: Int { contexts.count }
  var slotSize: Int { chunkSize + VaultFormat.slotOverhead }

  init(key: SymmetricKey, chunkSize: Int, headerMAC: [UInt8], workers: Int) throws {
    self.chunkSize = chunkSize
    self.headerMAC = headerMAC
    contexts = try cryptoCall {
      try (0..<max(1, workers)).map { _ in try ChaChaPoly.Context(key: key) }
    }
  }

  /// Seals `count` consecutive chunks starting at `firstIndex`. Every chunk but the batch's
  /// last is `chunkSize` long; the last is `lastLength` long and final if `lastIsFinal`.
  /// Each chunk gets a fresh random nonce.
  func seal(
    plaintext: UnsafeRawBufferPointer, slots: UnsafeMutableRawBufferPointer,
    firstIndex: Int, count: Int, lastLength: Int, lastIsFinal: Bool
  ) throws {
    let (chunkSize, slotSize, headerMAC) = (self.chunkSize, self.slotSize, self.headerMAC)
    // One CSPRNG call for the whole batch's nonces, then each goes to its slot.
    var nonces = [UInt8](repeating: 0, count: count * 12)
    try nonces.withUnsafeMutableBytes { try SecureRandom.fill($0) }
    for k in 0..<count {
      UnsafeMutableRawBufferPointer(rebasing: slots[(k * slotSize)..<(k * slotSize + 12)])
        .copyBytes(from: nonces[(k * 12)..<(k * 12 + 12)])
    }
    try forEachChunk(count: count) { k, context in
      let length = k == count - 1 ? lastLength : chunkSize
      let isFinal = k == count - 1 && lastIsFinal
      let aad = ChunkLayout.aad(
        headerMAC: headerMAC, index: firstIndex + k, plaintextLength: length, isFinal: isFinal)
      let slot = UnsafeMutableRawBufferPointer(
        rebasing: slots[(k * slotSize)..<(k * slotSize + length + VaultFormat.slotOverhead)])
      let nonce = UnsafeMutableRawBufferPointer(rebasing: slot[0..<12])
      try aad.withUnsafeBytes { aadBytes in
        try context.seal(
          plaintext: UnsafeRawBufferPointer(
            rebasing: plaintext[(k * chunkSize)..<(k * chunkSize + length)]),
          nonce: UnsafeRawBufferPointer(nonce), aad: aadBytes,
          ciphertext: UnsafeMutableRawBufferPointer(rebasing: slot[12..<(12 + length)]),
          tag: UnsafeMutableRawBufferPointer(rebasing: slot[(12 + length)..<(28 + length)]))
      }
    }
  }

  /// Opens `count` consecutive chunks; `lengths(k)` and `isFinal(k)` describe chunk k of
  /// the batch. Chunks that fail are reported in the returned list (index in the asset,
  /// reason); their plaintext regions are zeroed by the crypto layer, never left unverified.
  func open(
    slots: UnsafeRawBufferPointer, plaintext: UnsafeMutableRawBufferPointer,
    firstIndex: Int, count: Int, length: @escaping (Int) -> Int,
    isFinal: @escaping (Int) -> Bool
  ) -> [(index: Int, reason: String)] {
    let (chunkSize, slotSize, headerMAC) = (self.chunkSize, self.slotSize, self.headerMAC)
    let failures = FailureList()
    try? forEachChunk(count: count) { k, context in
      let chunkLength = length(k)
      let aad = ChunkLayout.aad(
        headerMAC: headerMAC, index: firstIndex + k, plaintextLength: chunkLength,
        isFinal: isFinal(k))
      let slot = UnsafeRawBufferPointer(
        rebasing: slots[(k * slotSize)..<(k * slotSize + chunkLength + VaultFormat.slotOverhead)])
      do {
        try aad.withUnsafeBytes { aadBytes in
          try context.open(
            ciphertext: UnsafeRawBufferPointer(rebasing: slot[12..<(12 + chunkLength)]),
            tag: UnsafeRawBufferPointer(rebasing: slot[(12 + chunkLength)..<(28 + chunkLength)]),
            nonce: UnsafeRawBufferPointer(rebasing: slot[0..<12]), aad: aadBytes,
            plaintext: UnsafeMutableRawBufferPointer(
              rebasing: plaintext[(k * chunkSize)..<(k * chunkSize + chunkLength)]))
        }
      } catch CryptoError.authenticationFailed {
        failures.append(firstIndex + k, "authentication failed")
      } catch {
        failures.append(firstIndex + k, "\(error)")
      }
    }
    return failures.sorted
  }

  /// Runs `body(k, context)` for k in 0..<count, spreading chunks over the workers.
  private func forEachChunk(
    count: Int, _ body: @escaping (Int, ChaChaPoly.Context) throws -> Void
  ) throws {
    let workers = min(contexts.count, count)
    if workers <= 1 {
      for k in 0..<count { try body(k, contexts[0]) }
      return
    }
    let firstError = FirstError()
    // Each worker w owns contexts[w] alone, and the chunks it touches (k ≡ w mod workers)
    // are disjoint regions of the batch buffers, so sharing them across workers is race-free.
    let job = WorkerJob(contexts: contexts, body: body)
    DispatchQueue.concurrentPerform(iterations: workers) { w in
      let context = job.contexts[w]
      var k = w
      while k < count {
        do {
          try job.body(k, context)
        } catch {
          firstError.record(error)
          return
        }
        k += workers
      }
    }
    if let error = firstError.value { throw error }
  }
}

/// The contexts and per-chunk work shared by the workers of one batch; thread-safety is
/// argued at the use site (each worker uses its own context and disjoint chunks).
private final class WorkerJob: @unchecked Sendable {
  let contexts: [ChaChaPoly.Context]
  let body: (Int, ChaChaPoly.Context) throws -> Void

  init(contexts: [ChaChaPoly.Context], body: @escaping (Int, ChaChaPoly.Context) throws -> Void) {
    self.contexts = contexts
    self.body = body
  }
}

/// The first error any worker hit.
private final class FirstError: @unchecked Sendable {
  private let lock = NSLock()
  private var error: (any Error)?

  func record(_ error: any Error) {
    lock.lock()
    if self.error == nil { self.error = error }
    lock.unlock()
  }

  var value: (any Error)? {
    lock.lock()
    defer { lock.unlock() }
    return error
  }
}

/// Chunks that failed to open, collected from several workers.
private final class FailureList: @unchecked Sendable {
  private let lock = NSLock()
  private var items: [(index: Int, reason: String)] = []

  func append(_ index: Int, _ reason: String) {
    lock.lock()
    items.append((index, reason))
    lock.unlock()
  }

  var sorted: [(index: Int, reason: String)] {
    lock.lock()
    defer { lock.unlock() }
    return items.sorted { $0.index < $1.index }
  }
}
