import VaultCore

/// The response tasks still running, so shutdown can wait for each to end.
final class TaskRegistry: Sendable {
  private struct State {
    var next = 0
    var tasks: [Int: Task<Void, Never>] = [:]
    /// Tasks that ended before they were registered (so they are not registered at all).
    var endedEarly: Set<Int> = []
  }

  private let state = Locked(State())

  /// Starts `body` as a task and tracks it until it returns.
  @discardableResult
  func spawn(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
    let key = state.withLock { state -> Int in
      state.next += 1
      return state.next
    }
    let task = Task {
      await body()
      self.state.withLock { state in
        if state.tasks.removeValue(forKey: key) == nil { state.endedEarly.insert(key) }
      }
    }
    state.withLock { state in
      if state.endedEarly.remove(key) == nil { state.tasks[key] = task }
    }
    return task
  }

  /// Cancels every task and waits for all of them.
  func cancelAndWait() async {
    let tasks = state.withLock { Array($0.tasks.values) }
    for task in tasks { task.cancel() }
    for task in tasks { await task.value }
  }
}
