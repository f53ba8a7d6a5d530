import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The default ``Origin``: URLSession with a data delegate, so bodies stream piece by piece
/// instead of being collected in memory. Follows at most `maximumRedirects` redirects;
/// `idleTimeout` bounds the wait for each piece of data.
public final class HTTPOrigin: Origin {
  /// Redirects followed before giving up.
  public let maximumRedirects: Int
  /// Seconds without any data before a request fails.
  public let idleTimeout: TimeInterval
  private let session: URLSession
  private let delegate: SessionDelegate

  /// Creates an origin client.
  /// - Parameters:
  ///   - idleTimeout: seconds without any data before a request fails.
  ///   - maximumRedirects: redirects followed per request.
  public init(idleTimeout: TimeInterval = 30, maximumRedirects: Int = 8) {
    self.maximumRedirects = maximumRedirects
    self.idleTimeout = idleTimeout
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = idleTimeout
    configuration.timeoutIntervalForResource = 24 * 3600
    configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
    configuration.urlCache = nil
    configuration.httpMaximumConnectionsPerHost = 16
    delegate = SessionDelegate(maximumRedirects: maximumRedirects)
    session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
  }

  deinit {
    session.invalidateAndCancel()
  }

  public func send(_ request: OriginRequest) async throws -> OriginResponse {
    guard let scheme = request.url.scheme?.lowercased(), scheme == "http" || scheme == "https"
    else {
      throw LoaderError.unsupportedURL(request.url.absoluteString)
    }
    var urlRequest = URLRequest(url: request.url)
    urlRequest.httpMethod = "GET"
    // Media bytes must arrive as stored: no transparent decompression changing lengths.
    urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
    if let range = request.rangeHeader { urlRequest.setValue(range, forHTTPHeaderField: "Range") }
    if let ifRange = request.ifRange {
      urlRequest.setValue(ifRange, forHTTPHeaderField: "If-Range")
    }
    let task = session.dataTask(with: urlRequest)
    let transfer = Transfer(url: request.url.absoluteString)
    delegate.register(task, transfer)
    transfer.startWatchdog(idleTimeout: idleTimeout)
    task.resume()
    return try await withTaskCancellationHandler {
      try await transfer.head()
    } onCancel: {
      task.cancel()
    }
  }
}

/// The state of one request: the head (awaited once) and the body stream.
final class Transfer: @unchecked Sendable {
  let url: String
  private let lock = NSLock()
  private let headResult = OneShot<OriginResponse>()
  private var bodyContinuation: AsyncThrowingStream<[UInt8], any Error>.Continuation?
  var redirects = 0
  weak var task: URLSessionTask?
  private var lastActivity = DispatchTime.now()
  private var watchdog: (any DispatchSourceTimer)?
  private var finished = false

  /// Cancels the task unless it already completed. FoundationNetworking tears a finished
  /// transfer down on its own threads; a late `cancel()` racing that teardown is a known
  /// crash family on Linux (swift-corelibs-foundation #4791, #5469), so it is not sent.
  func cancelIfRunning() {
    let running = lock.withLock { !finished }
    if running { task?.cancel() }
  }

  init(url: String) { self.url = url }

  /// Fails the transfer when nothing arrives for `idleTimeout` seconds. URLSession has its
  /// own request timeout, but on Linux it was seen not to fire under heavy load; this one
  /// does not depend on it.
  func startWatchdog(idleTimeout: TimeInterval) {
    let timer = DispatchSource.makeTimerSource(queue: .global())
    let interval = DispatchTimeInterval.milliseconds(max(50, Int(idleTimeout * 250)))
    timer.schedule(deadline: .now() + interval, repeating: interval)
    timer.setEventHandler { [weak self] in
      guard let self else { return }
      let idle = self.lock.withLock {
        DispatchTime.now().uptimeNanoseconds - self.lastActivity.uptimeNanoseconds
      }
      if Double(idle) / 1e9 > idleTimeout {
        self.cancelIfRunning()
        self.completed(
          error: LoaderError.transport(
            url: self.url, reason: "no data for \(Int(idleTimeout)) s (timed out)"))
      }
    }
    lock.withLock { watchdog = timer }
    timer.resume()
  }

  private func touch() { lock.withLock { lastActivity = DispatchTime.now() } }

  func head() async throws -> OriginResponse { try await headResult.value() }

  func received(response: HTTPURLResponse, task: URLSessionTask) {
    touch()
    var headers: [String: String] = [:]
    for (key, value) in response.allHeaderFields {
      if let key = key as? String, let value = value as? String {
        headers[key.lowercased()] = value
      }
    }
    let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
    lock.withLock { bodyContinuation = continuation }
    continuation.onTermination = { [weak self] termination in
      if case .cancelled = termination { self?.cancelIfRunning() }
    }
    let response = OriginResponse(
      status: response.statusCode, headers: headers, url: response.url ?? URL(fileURLWithPath: "/"),
      body: stream, cancel: { [weak self] in self?.cancelIfRunning() })
    headResult.resolve(.success(response))
  }

  func received(data: Data) {
    touch()
    let continuation = lock.withLock { bodyContinuation }
    continuation?.yield([UInt8](data))
  }

  func completed(error: (any Error)?) {
    lock.withLock {
      finished = true
      watchdog?.cancel()
      watchdog = nil
    }
    let mapped: (any Error)? = error.map { error in
      if let loader = error as? LoaderError { return loader }
      let nsError = error as NSError
      if nsError.code == NSURLErrorCancelled, redirects > 0 {
        return LoaderError.tooManyRedirects(url: url)
      }
      return LoaderError.transport(url: url, reason: nsError.localizedDescription)
    }
    headResult.resolve(.failure(mapped ?? LoaderError.transport(url: url, reason: "no response")))
    let continuation = lock.withLock {
      let c = bodyContinuation
      bodyContinuation = nil
      return c
    }
    if let mapped { continuation?.finish(throwing: mapped) } else { continuation?.finish() }
  }
}

/// Routes URLSession delegate callbacks to the ``Transfer`` of each task.
final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
  private let lock = NSLock()
  private var transfers: [Int: Transfer] = [:]
  let maximumRedirects: Int

  init(maximumRedirects: Int) { self.maximumRedirects = maximumRedirects }

  func register(_ task: URLSessionTask, _ transfer: Transfer) {
    transfer.task = task
    lock.withLock { transfers[task.taskIdentifier] = transfer }
  }

  private func transfer(_ task: URLSessionTask) -> Transfer? {
    lock.withLock { transfers[task.taskIdentifier] }
  }

  func urlSession(
    _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
  ) {
    if let http = response as? HTTPURLResponse, let transfer = transfer(dataTask) {
      transfer.received(response: http, task: dataTask)
    }
    completionHandler(.allow)
  }

  func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
    transfer(dataTask)?.received(data: data)
  }

  func urlSession(
    _ session: URLSession, task: URLSessionTask,
    willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
    completionHandler: @escaping (URLRequest?) -> Void
  ) {
    guard let transfer = transfer(task) else {
      completionHandler(request)
      return
    }
    transfer.redirects += 1
    if transfer.redirects > maximumRedirects {
      completionHandler(nil)
      task.cancel()
      transfer.completed(error: LoaderError.tooManyRedirects(url: transfer.url))
      return
    }
    completionHandler(request)
  }

  func urlSession(
    _ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?
  ) {
    let transfer = lock.withLock { transfers.removeValue(forKey: task.taskIdentifier) }
    transfer?.completed(error: error)
  }
}
