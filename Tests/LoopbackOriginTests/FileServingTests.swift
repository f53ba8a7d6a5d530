import Foundation
import LoopbackOrigin
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Bodies streamed from files on disk.
@Suite("Files on disk")
struct FileServingTests {
  @Test("a file is served with ranges, a derived ETag and its mtime as Last-Modified")
  func servesFile() throws {
    let directory = try TempDirectory()
    defer { directory.cleanup() }
    let path = directory.file("clip.mp4")
    let content = pattern(200_000)
    try Data(content).write(to: URL(fileURLWithPath: path))
    let origin = try LoopbackOrigin()
    origin.serve("/clip.mp4", file: path, contentType: "video/mp4", etag: nil)
    let whole = try Curl.fetch(origin.url("/clip.mp4"))
    #expect(whole.status == 200)
    #expect(summary(whole.body) == summary(content))
    #expect(whole.headers["etag"]?.hasSuffix("-30d40\"") == true)  // 200000 in hex
    let lastModified = try #require(whole.headers["last-modified"])
    let part = try Curl.fetch(
      origin.url("/clip.mp4"),
      ["-H", "Range: bytes=70000-140000", "-H", "If-Range: \(lastModified)"])
    #expect(part.status == 206)
    #expect(summary(part.body) == summary(Array(content[70000...140000])))
    #expect(part.headers["content-range"] == "bytes 70000-140000/200000")
  }

  @Test("a file that disappears gives 404")
  func missingFile() throws {
    let directory = try TempDirectory()
    defer { directory.cleanup() }
    let path = directory.file("gone")
    try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
    let origin = try LoopbackOrigin()
    origin.serve("/gone", file: path, etag: "\"x\"")
    #expect(try Curl.fetch(origin.url("/gone")).status == 200)
    try FileManager.default.removeItem(atPath: path)
    #expect(try Curl.fetch(origin.url("/gone")).status == 404)
  }

  @Test("a 64 MiB file streams in constant memory")
  func largeFileLowMemory() throws {
    let directory = try TempDirectory()
    defer { directory.cleanup() }
    let path = directory.file("big")
    let block = pattern(1 << 20)
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    for _ in 0..<64 { handle.write(Data(block)) }
    try handle.close()

    let origin = try LoopbackOrigin()
    origin.serve("/big", file: path, etag: nil)
    // Loading the file would add at least 64 MiB of heap; streaming adds a 64 KiB buffer.
    // Other tests run in parallel and allocate too, so one quiet attempt out of three is
    // enough (a loading origin grows by 64 MiB on every attempt: large blocks are unmapped).
    var growths: [Int] = []
    for _ in 0..<3 {
      let before = try #require(residentAnonymousBytes())
      let sampler = PeakSampler()
      let output = try Curl.run(
        ["-sS", "-o", "/dev/null", "-w", "%{size_download}", origin.url("/big").absoluteString],
        timeout: 20)
      let peak = sampler.finish()
      #expect(output.exitCode == 0)
      #expect(output.stdout == "\(64 << 20)")
      growths.append(peak - before)
      if peak - before < 32 << 20 { break }
    }
    #expect(growths.contains { $0 < 32 << 20 }, "heap growth per download: \(growths)")
    #expect(origin.bodyBytesSent == growths.count * (64 << 20))
    let tail = try Curl.fetch(origin.url("/big"), ["-H", "Range: bytes=-1000"])
    #expect(summary(tail.body) == summary(Array(block[(block.count - 1000)...])))
  }

  @Test("a 1 GiB sparse file serves a range at its end")
  func gigabyteFile() throws {
    let directory = try TempDirectory()
    defer { directory.cleanup() }
    let path = directory.file("sparse")
    try makeSparseFile(path, size: 1 << 30)
    let marker = Array("END-OF-GIGABYTE".utf8)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    try handle.seek(toOffset: UInt64((1 << 30) - marker.count))
    handle.write(Data(marker))
    try handle.close()
    let origin = try LoopbackOrigin()
    origin.serve("/sparse", file: path, etag: nil)
    let response = try Curl.fetch(origin.url("/sparse"), ["-H", "Range: bytes=1073741000-"])
    #expect(response.status == 206)
    #expect(response.headers["content-range"] == "bytes 1073741000-1073741823/1073741824")
    #expect(response.body.count == 824)
    #expect(Array(response.body.suffix(15)) == marker)
    let head = try Curl.fetch(origin.url("/sparse"), ["-I"])
    #expect(head.headers["content-length"] == "1073741824")
  }
}

/// Samples this process's heap every few milliseconds on a thread until ``finish()``.
final class PeakSampler: Sendable {
  private let state = LockedBox<(peak: Int, done: Bool)>((0, false))
  private let finished = DispatchSemaphore(value: 0)

  init() {
    let thread = Thread { [self] in
      while true {
        let sample = residentAnonymousBytes() ?? 0
        let done = state.withLock { value -> Bool in
          value.peak = max(value.peak, sample)
          return value.done
        }
        if done { break }
        usleep(2_000)
      }
      finished.signal()
    }
    thread.start()
  }

  /// Stops sampling and returns the highest sample.
  func finish() -> Int {
    state.withLock { $0.done = true }
    finished.wait()
    return state.withLock { max($0.peak, residentAnonymousBytes() ?? 0) }
  }
}
