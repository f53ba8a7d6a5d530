import Foundation
import LoopbackOrigin
import Testing
import VaultCore
import VaultLoader

/// Replays AVPlayer's request pattern through the loading-request interface.
@Suite("Player replay through LoadingRequest")
struct PlayerReplayTests {
  let chunk = LoaderFixture.chunk

  /// Collects what a request delivered.
  final class Received: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    /// Cancel the request from inside `respond` once this many bytes arrived (as a player
    /// that has buffered enough), so every replay asks for exactly the same bytes.
    var cancelAfter: Int?
    weak var request: LoadingRequest?
    func append(_ piece: Data) {
      let total = lock.withLock {
        data.append(piece)
        return data.count
      }
      if let limit = cancelAfter, total >= limit { request?.cancel() }
    }
    var bytes: [UInt8] { lock.withLock { [UInt8](data) } }
    var count: Int { lock.withLock { data.count } }
  }

  func request(
    _ f: LoaderFixture, _ path: String, offset: Int64, length: Int = 0, toEnd: Bool = false,
    info: Bool = false,
    cancelAfter: Int? = nil
  ) -> (LoadingRequest, Received) {
    let received = Received()
    received.cancelAfter = cancelAfter
    let data = LoadingRequest.DataRequest(
      requestedOffset: offset, requestedLength: length, requestsAllDataToEndOfResource: toEnd)
    let request = LoadingRequest(
      url: f.origin.url(path), wantsContentInformation: info, dataRequest: data,
      respond: { received.append($0) })
    received.request = request
    return (request, received)
  }

  func replay(_ f: LoaderFixture, _ source: [UInt8]) async throws {
    let loader = ResourceLoader(loader: f.loader)
    let size = source.count
    // 1. Probe: content information + bytes=0-1.
    let (probe, probeData) = request(f, "/movie.mp4", offset: 0, length: 2, info: true)
    await loader.handle(probe).value
    #expect(probe.isFinished && probe.error == nil)
    #expect(probe.contentInformationRequest?.contentLength == Int64(size))
    #expect(probe.contentInformationRequest?.contentType == "public.mpeg-4")
    #expect(probe.contentInformationRequest?.isByteRangeAccessSupported == true)
    #expect(probeData.bytes == Array(source[0..<2]))
    // 2. bytes=0- , cancelled after a few hundred KB.
    let (open, openData) = request(f, "/movie.mp4", offset: 0, toEnd: true, cancelAfter: 300_000)
    await loader.handle(open).value
    #expect(open.isCancelled)
    let resumeAt = openData.count
    #expect(openData.bytes == Array(source[0..<resumeAt]))
    // 3. Resume at the current offset.
    let (resume, resumeData) = request(
      f, "/movie.mp4", offset: Int64(resumeAt), toEnd: true, cancelAfter: 200_000)
    await loader.handle(resume).value
    #expect(resumeData.bytes == Array(source[resumeAt..<(resumeAt + resumeData.count)]))
    // 4. Seek forward: a new open-ended request far ahead.
    let seekAt = size * 3 / 4
    let (seek, seekData) = request(f, "/movie.mp4", offset: Int64(seekAt), toEnd: true)
    await loader.handle(seek).value
    #expect(seek.isFinished && seek.error == nil)
    #expect(seekData.bytes == Array(source[seekAt...]))
    // 5. Seek back into a stored region.
    let (back, backData) = request(f, "/movie.mp4", offset: 10_000, length: 100_000)
    await loader.handle(back).value
    #expect(backData.bytes == Array(source[10_000..<110_000]))
    // 6. A small pre-buffer request (next queue item style).
    let (pre, preData) = request(f, "/movie.mp4", offset: Int64(size / 2), length: 65_536)
    await loader.handle(pre).value
    #expect(preData.bytes == Array(source[(size / 2)..<(size / 2 + 65_536)]))
  }

  @Test(
    "each byte from the origin at most once (plus chunk slack); a second replay fetches nothing")
  func replayTwice() async throws {
    let f = try LoaderFixture()
    defer { f.cleanup() }
    let source = media(6 << 20, seed: 30)
    f.origin.serve("/movie.mp4", bytes: source, contentType: "video/mp4")
    f.origin.setBehaviors([.trickle(bytesPerSecond: 2 << 20)], for: "/movie.mp4")
    try await replay(f, source)
    let requests = f.origin.requests.count
    // At most the whole file once, plus up to two chunks of alignment slack per request,
    // plus what was already in flight (socket buffers) at each of the player's 2 cancels.
    let inFlight = 2 * (256 << 10)
    #expect(
      f.origin.bodyBytesSent <= source.count + requests * 2 * chunk + inFlight,
      "\(f.origin.bodyBytesSent) bytes in \(requests) requests")
    // Requests the player cancelled may still be sending their last bytes (the trickle
    // stops only when the origin notices the closed connection): wait until the origin is
    // quiet, so what the second replay counts is its own.
    var sent = f.origin.bodyBytesSent
    for _ in 0..<40 {
      try await Task.sleep(nanoseconds: 100_000_000)
      if f.origin.bodyBytesSent == sent { break }
      sent = f.origin.bodyBytesSent
    }
    f.origin.resetStatistics()
    try await replay(f, source)
    #expect(f.origin.bodyBytesSent == 0, "second replay fetched \(f.origin.bodyBytesSent) bytes")
    #expect(f.origin.requests.isEmpty)
  }
}
