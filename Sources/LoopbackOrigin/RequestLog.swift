/// The origin's statistics: request records, body bytes sent and connections accepted.
final class RequestLog: Sendable {
  private struct State {
    var records: [RequestRecord] = []
    /// The id of `records[0]`; ids stay valid across ``reset()`` (stale ids are ignored).
    var firstID = 0
    var bodyBytesSent = 0
    var connectionsAccepted = 0
    var connectionSequence = 0
  }

  private let state = Locked(State())

  var records: [RequestRecord] { state.withLock { $0.records } }
  var bodyBytesSent: Int { state.withLock { $0.bodyBytesSent } }
  var connectionsAccepted: Int { state.withLock { $0.connectionsAccepted } }

  /// Counts a new connection and returns its sequence number (from 1, never reset).
  func connectionAccepted() -> Int {
    state.withLock {
      $0.connectionsAccepted += 1
      $0.connectionSequence += 1
      return $0.connectionSequence
    }
  }

  /// Appends a record and returns its id for ``addBodyBytes(_:to:)``.
  func append(_ record: RequestRecord) -> Int {
    state.withLock {
      $0.records.append(record)
      return $0.firstID + $0.records.count - 1
    }
  }

  /// Adds `count` (negative to take back bytes that could not be sent) to a record and to
  /// the total.
  func addBodyBytes(_ count: Int, to id: Int) {
    state.withLock {
      $0.bodyBytesSent += count
      let index = id - $0.firstID
      if index >= 0 && index < $0.records.count { $0.records[index].bodyBytesSent += count }
    }
  }

  /// Forgets all records and zeroes the counters.
  func reset() {
    state.withLock {
      $0.firstID += $0.records.count
      $0.records = []
      $0.bodyBytesSent = 0
      $0.connectionsAccepted = 0
    }
  }
}
