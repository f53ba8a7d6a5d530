import Foundation

/// A platform-neutral mirror of `AVAssetResourceLoadingRequest`, so an AVFoundation adapter
/// on Apple platforms is a thin shell: it copies the player's request into one of these,
/// hands it to ``ResourceLoader/handle(_:)``, and forwards `respond(with:)` /
/// `finishLoading` back. Everything behind it is tested on Linux.
public final class LoadingRequest: @unchecked Sendable {
  /// Mirrors `AVAssetResourceLoadingContentInformationRequest`.
  public final class ContentInformationRequest: @unchecked Sendable {
    /// A Uniform Type Identifier (e.g. `public.mp3`), as AVFoundation wants.
    public internal(set) var contentType: String?
    /// Total length of the resource.
    public internal(set) var contentLength: Int64 = 0
    /// Whether byte ranges can be requested.
    public internal(set) var isByteRangeAccessSupported = false
  }

  /// Mirrors `AVAssetResourceLoadingDataRequest`.
  public final class DataRequest: @unchecked Sendable {
    /// First byte requested.
    public let requestedOffset: Int64
    /// Bytes requested (ignored when `requestsAllDataToEndOfResource`).
    public let requestedLength: Int
    /// Whether the player wants everything from `requestedOffset` to the end.
    public let requestsAllDataToEndOfResource: Bool
    /// Offset of the next byte to be delivered.
    public internal(set) var currentOffset: Int64

    /// Creates a data request.
    public init(requestedOffset: Int64, requestedLength: Int, requestsAllDataToEndOfResource: Bool)
    {
      self.requestedOffset = requestedOffset
      self.requestedLength = requestedLength
      self.requestsAllDataToEndOfResource = requestsAllDataToEndOfResource
      currentOffset = requestedOffset
    }
  }

  /// The resource.
  public let url: URL
  /// An explicit content id (overrides the URL as the cache key).
  public let contentID: String?
  /// Present when the player asks what the resource is.
  public let contentInformationRequest: ContentInformationRequest?
  /// Present when the player asks for bytes.
  public let dataRequest: DataRequest?

  private let lock = NSLock()
  private var finished = false
  private var cancelled = false
  private var failure: (any Error)?
  private let sink: @Sendable (Data) -> Void
  private var task: Task<Void, Never>?

  /// Creates a request.
  /// - Parameters:
  ///   - url: the resource.
  ///   - contentID: an explicit content id, if any.
  ///   - wantsContentInformation: whether to fill a content information request.
  ///   - dataRequest: the byte range wanted, if any.
  ///   - respond: receives each piece of data, in order (AVFoundation's `respond(with:)`).
  public init(
    url: URL, contentID: String? = nil, wantsContentInformation: Bool, dataRequest: DataRequest?,
    respond: @escaping @Sendable (Data) -> Void
  ) {
    self.url = url
    self.contentID = contentID
    contentInformationRequest = wantsContentInformation ? ContentInformationRequest() : nil
    self.dataRequest = dataRequest
    sink = respond
  }

  /// Whether `finishLoading` (with or without an error) was called.
  public var isFinished: Bool { lock.withLock { finished } }
  /// Whether the request was cancelled.
  public var isCancelled: Bool { lock.withLock { cancelled } }
  /// The error it finished with, if any.
  public var error: (any Error)? { lock.withLock { failure } }

  /// Delivers data and advances `currentOffset`.
  public func respond(with data: Data) {
    guard !isFinished && !isCancelled else { return }
    dataRequest.map { $0.currentOffset += Int64(data.count) }
    sink(data)
  }

  /// Marks the request complete.
  public func finishLoading() {
    lock.withLock { finished = true }
  }

  /// Marks the request failed.
  public func finishLoading(with error: any Error) {
    lock.withLock {
      finished = true
      failure = error
    }
  }

  /// Cancels the request (the player no longer wants it): stops its read.
  public func cancel() {
    let running = lock.withLock { () -> Task<Void, Never>? in
      cancelled = true
      return task
    }
    running?.cancel()
  }

  func attach(_ task: Task<Void, Never>) {
    let alreadyCancelled = lock.withLock { () -> Bool in
      self.task = task
      return cancelled
    }
    if alreadyCancelled { task.cancel() }
  }
}

/// Serves ``LoadingRequest``s from a ``RangeLoader``: the part an AVAssetResourceLoader
/// delegate would do.
public struct ResourceLoader: Sendable {
  /// The loader that answers.
  public let loader: RangeLoader

  /// Creates a resource loader.
  public init(loader: RangeLoader) { self.loader = loader }

  /// Starts answering a request; the returned task ends when the request is finished or
  /// cancelled.
  @discardableResult
  public func handle(_ request: LoadingRequest) -> Task<Void, Never> {
    let loader = self.loader
    let task = Task {
      do {
        if let info = request.contentInformationRequest {
          let content = try await loader.contentInfo(for: request.url, contentID: request.contentID)
          info.contentType = content.uniformTypeIdentifier ?? content.contentType
          info.contentLength = Int64(content.length)
          // The vault serves ranges even when the origin does not.
          info.isByteRangeAccessSupported = true
        }
        if let data = request.dataRequest {
          let start = UInt64(data.requestedOffset)
          let end: UInt64? =
            data.requestsAllDataToEndOfResource
            ? nil : start + UInt64(max(data.requestedLength, 1)) - 1
          // Check for cancellation before pulling the next piece: a cancelled player request
          // must not start a fetch for bytes nobody will take.
          var pieces = loader.read(
            request.url, contentID: request.contentID, from: start, through: end
          )
          .makeAsyncIterator()
          // `request.isCancelled` too: a cancel that comes before the task is attached (a
          // fast answer from the vault) only sets the flag until then.
          while !Task.isCancelled, !request.isCancelled, let piece = try await pieces.next() {
            try Task.checkCancellation()
            request.respond(with: Data(piece))
          }
          if request.isCancelled { throw CancellationError() }
          try Task.checkCancellation()
        }
        request.finishLoading()
      } catch is CancellationError {
        // The player cancelled; AVFoundation expects no finishLoading call then.
      } catch {
        if !request.isCancelled { request.finishLoading(with: error) }
      }
    }
    request.attach(task)
    return task
  }
}
