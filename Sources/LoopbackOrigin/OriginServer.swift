import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The listening socket, the accept thread and the connection threads behind a
/// ``LoopbackOrigin``. Threads hold this object, never the ``LoopbackOrigin``, so dropping the
/// last reference to the origin runs its `deinit`, which stops everything.
final class OriginServer: Sendable {
  /// Connections served at once; more wait in the listen backlog.
  static let maxConnections = 128
  /// How long ``stop()`` waits for threads to finish.
  static let stopTimeout: Double = 10

  let store = ResourceStore()
  let log = RequestLog()
  let wake: WakePipe
  let port: UInt16
  /// Seconds a connection may wait for request bytes (and for a send to progress).
  let readTimeout: Double
  let logger: (@Sendable (String) -> Void)?

  private struct State {
    var stopping = false
    var connections: [Int: Int32] = [:]
  }

  private let listener: Int32
  private let state = Locked(State())
  private let threads = DispatchGroup()

  init(port: UInt16, readTimeout: Double, logger: (@Sendable (String) -> Void)?) throws {
    wake = try WakePipe()
    (listener, self.port) = try Socket.listen(port: port)
    self.readTimeout = max(0.001, readTimeout)
    self.logger = logger
  }

  var isStopping: Bool { state.withLock { $0.stopping } }

  /// Starts the accept thread.
  func start() {
    threads.enter()
    let thread = Thread { [self] in
      Thread.current.name = "origin-accept"  // shows in top -H and /proc (15 chars)
      acceptLoop()
      // Shut down first: should a child process have inherited the descriptor (close-on-exec
      // is not atomic on every platform), the port must still stop listening.
      _ = shutdown(listener, Int32(SHUT_RDWR))
      _ = systemClose(listener)
      threads.leave()
    }
    thread.start()
  }

  /// Closes the listener and every connection, then waits (up to ``stopTimeout``) for all
  /// threads to finish. Safe to call more than once and from several threads.
  func stop() {
    let first = state.withLock { state -> Bool in
      guard !state.stopping else { return false }
      state.stopping = true
      for descriptor in state.connections.values {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))  // wakes sends blocked on a slow client
      }
      return true
    }
    if first { wake.signal() }
    _ = threads.wait(timeout: .now() + Self.stopTimeout)
  }

  private func acceptLoop() {
    while true {
      if state.withLock({ $0.connections.count }) >= Self.maxConnections {
        if Socket.wait(nil, wake: wake.readEnd, timeout: 0.01) == .stopped { return }
        continue
      }
      switch Socket.wait(listener, wake: wake.readEnd, timeout: 3600) {
      case .stopped: return
      case .timedOut: continue
      case .readable: break
      }
      guard let descriptor = Socket.accept(listener, sendTimeout: readTimeout) else {
        // Out of descriptors or memory: back off instead of spinning on a readable listener.
        if Socket.wait(nil, wake: wake.readEnd, timeout: 0.01) == .stopped { return }
        continue
      }
      let number = log.connectionAccepted()
      let registered = state.withLock { state -> Bool in
        guard !state.stopping else { return false }
        state.connections[number] = descriptor
        return true
      }
      guard registered else {
        _ = systemClose(descriptor)
        return
      }
      threads.enter()
      let thread = Thread { [self] in
        Thread.current.name = "origin-conn"
        Connection(descriptor: descriptor, number: number, server: self).run()
        connectionEnded(number)
        threads.leave()
      }
      thread.start()
    }
  }

  /// Forgets and closes a connection (under the lock, so ``stop()`` never shuts down a reused
  /// descriptor number).
  private func connectionEnded(_ number: Int) {
    state.withLock { state in
      guard let descriptor = state.connections.removeValue(forKey: number) else { return }
      _ = shutdown(descriptor, Int32(SHUT_WR))
      _ = systemClose(descriptor)
    }
  }
}
