import Foundation

/// What a request finds at its path, taken atomically.
struct PathSnapshot {
  var resource: Resource?
  var behaviors: [Behavior]
  /// How many requests reached this path before this one, since its behaviours were last set.
  var requestIndex: Int
}

/// The resources and behaviours of every path.
final class ResourceStore: Sendable {
  private struct State {
    var resources: [String: Resource] = [:]
    var behaviors: [String: [Behavior]] = [:]
    var requestCounts: [String: Int] = [:]
  }

  private let state = Locked(State())

  /// The routing key of a path: it always starts with `/`.
  static func key(_ path: String) -> String { path.hasPrefix("/") ? path : "/" + path }

  func set(_ resource: Resource, at path: String) {
    state.withLock { $0.resources[Self.key(path)] = resource }
  }

  func remove(_ path: String) {
    _ = state.withLock { $0.resources.removeValue(forKey: Self.key(path)) }
  }

  func setBehaviors(_ behaviors: [Behavior], for path: String) {
    state.withLock {
      $0.behaviors[Self.key(path)] = behaviors.isEmpty ? nil : behaviors
      $0.requestCounts[Self.key(path)] = 0
    }
  }

  /// Replaces the body and entity tag, keeping the content type; `Last-Modified`, if the path
  /// had one, moves forward by at least a second so date validators change too.
  func replaceBody(_ path: String, bytes: [UInt8], etag: String) {
    state.withLock {
      let key = Self.key(path)
      let old = $0.resources[key]
      var previous = old?.lastModified
      if case .file(let file) = old?.body {
        previous =
          (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate]
          as? Date
      }
      let now = Date()
      let lastModified = previous.map { max(now, $0.addingTimeInterval(1)) }
      $0.resources[key] = Resource(
        body: .bytes(bytes),
        contentType: old == nil ? "application/octet-stream" : old?.contentType,
        etag: etag, lastModified: lastModified)
    }
  }

  /// The path's resource and behaviours, counting the request.
  func snapshot(_ path: String) -> PathSnapshot {
    state.withLock {
      let key = Self.key(path)
      let index = $0.requestCounts[key, default: 0]
      $0.requestCounts[key] = index + 1
      return PathSnapshot(
        resource: $0.resources[key], behaviors: $0.behaviors[key] ?? [], requestIndex: index)
    }
  }
}
