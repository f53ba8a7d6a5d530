import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The POSIX socket calls the origin makes, with platform differences kept here.
enum Socket {
  /// The outcome of waiting for a descriptor.
  enum Wait: Equatable {
    case readable
    case timedOut
    /// The wake pipe fired: the origin is stopping.
    case stopped
  }

  #if canImport(Glibc)
    // Close-on-exec from the start: a child spawned by another thread between `socket` and
    // `fcntl` would otherwise keep the listener alive after `stop()`.
    private static let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    private static let sendFlags = Int32(MSG_NOSIGNAL)
  #else
    private static let streamType = SOCK_STREAM
    private static let sendFlags: Int32 = 0
  #endif

  /// A listening socket on 127.0.0.1 and the port it got (`port` 0 picks a free one).
  static func listen(port: UInt16, backlog: Int32 = 128) throws -> (Int32, UInt16) {
    let descriptor = socket(AF_INET, streamType, 0)
    guard descriptor >= 0 else { throw LoopbackOriginError(operation: "socket", code: errno) }
    func fail(_ operation: String) -> LoopbackOriginError {
      let error = LoopbackOriginError(operation: operation, code: errno)
      _ = close(descriptor)
      return error
    }
    setCloseOnExec(descriptor)
    var one: Int32 = 1
    _ = setsockopt(
      descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0 else { throw fail("bind") }
    guard systemListen(descriptor, backlog) == 0 else { throw fail("listen") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getsockname(descriptor, $0, &length)
      }
    }
    guard named == 0 else { throw fail("getsockname") }
    return (descriptor, UInt16(bigEndian: address.sin_port))
  }

  /// Accepts one pending connection (close-on-exec, no SIGPIPE, no Nagle, send timeout).
  static func accept(_ listener: Int32, sendTimeout: Double) -> Int32? {
    let descriptor = systemAccept(listener)
    guard descriptor >= 0 else { return nil }
    setCloseOnExec(descriptor)
    var one: Int32 = 1
    let size = socklen_t(MemoryLayout<Int32>.size)
    _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, size)
    #if canImport(Darwin)
      _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, size)
    #endif
    let whole = sendTimeout.rounded(.down)
    var timeout = timeval(
      tv_sec: Int(whole), tv_usec: .init((sendTimeout - whole) * 1_000_000))
    _ = setsockopt(
      descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    return descriptor
  }

  /// Marks a descriptor close-on-exec so child processes (curl in tests) do not inherit it.
  static func setCloseOnExec(_ descriptor: Int32) {
    _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
  }

  /// Sends all of `bytes`; returns how many were sent (fewer when the peer went away, the
  /// send timed out, or the socket was shut down).
  static func send(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
    guard let base = bytes.baseAddress else { return 0 }
    var sent = 0
    while sent < bytes.count {
      let result = systemSend(descriptor, base + sent, bytes.count - sent, sendFlags)
      if result > 0 {
        sent += result
      } else if result < 0 && errno == EINTR {
        continue
      } else {
        break
      }
    }
    return sent
  }

  /// Receives up to `capacity` bytes and appends them; returns false on end of stream or error.
  static func receive(_ descriptor: Int32, into buffer: inout [UInt8], capacity: Int) -> Bool {
    var chunk = [UInt8](repeating: 0, count: capacity)
    while true {
      let count = chunk.withUnsafeMutableBytes {
        recv(descriptor, $0.baseAddress, capacity, 0)
      }
      if count > 0 {
        buffer.append(contentsOf: chunk[0..<count])
        return true
      }
      if count < 0 && errno == EINTR { continue }
      return false
    }
  }

  /// Waits until `descriptor` (if any) is readable, `wake` fires, or `timeout` seconds pass.
  static func wait(_ descriptor: Int32?, wake: Int32, timeout: Double) -> Wait {
    let deadline = Monotonic.now() + max(0, timeout)
    while true {
      var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
      if let descriptor { fds.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
      let remaining = deadline - Monotonic.now()
      let milliseconds = Int32(min(max(0, remaining) * 1000, Double(Int32.max)).rounded(.up))
      let result = poll(&fds, nfds_t(fds.count), milliseconds)
      if result < 0 {
        if errno == EINTR { continue }
        return .stopped
      }
      if fds[0].revents != 0 { return .stopped }
      if fds.count > 1 && fds[1].revents != 0 { return .readable }
      if result == 0 && Monotonic.now() >= deadline { return .timedOut }
    }
  }

  /// Whether a readable connection was closed by its peer (end of stream or error), without
  /// consuming data it sent.
  static func peerClosed(_ descriptor: Int32) -> Bool {
    var byte: UInt8 = 0
    let result = recv(descriptor, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
    return result == 0 || (result < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
  }

  /// Sleeps up to `seconds`, returning early (false) when the origin stops or the peer closes.
  static func pause(_ descriptor: Int32, wake: Int32, seconds: Double) -> Bool {
    let deadline = Monotonic.now() + seconds
    var watchPeer = true
    while true {
      let remaining = deadline - Monotonic.now()
      if remaining <= 0 { return true }
      switch wait(watchPeer ? descriptor : nil, wake: wake, timeout: remaining) {
      case .timedOut: return true
      case .stopped: return false
      case .readable:
        if peerClosed(descriptor) { return false }
        watchPeer = false  // the client sent more (pipelining): only the wake pipe now
      }
    }
  }
}

/// A monotonic clock in seconds.
enum Monotonic {
  static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// A pipe whose read end becomes readable, for good, when the origin stops: every `poll`
/// includes it, so one byte wakes every thread.
final class WakePipe: Sendable {
  let readEnd: Int32
  private let writeEnd: Int32

  init() throws {
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { throw LoopbackOriginError(operation: "pipe", code: errno) }
    readEnd = ends[0]
    writeEnd = ends[1]
    Socket.setCloseOnExec(readEnd)
    Socket.setCloseOnExec(writeEnd)
  }

  /// Makes the read end readable.
  func signal() {
    var byte: UInt8 = 1
    _ = write(writeEnd, &byte, 1)
  }

  deinit {
    _ = close(readEnd)
    _ = close(writeEnd)
  }
}
