import Foundation
import VaultCore

extension RangeLoader {
  /// A multi-line description of what the loader is doing right now: per asset, the
  /// fetches in flight, the chunks readers wait on, the arrived-but-unstored chunks and the
  /// storer's backlog. For diagnosing a read that does not progress (`vault fetch` and
  /// `vault serve` print it on SIGUSR1).
  public func diagnostics() -> String {
    var lines = ["loader: \(entries.count) entries, \(probes.count) probes, offline \(offline)"]
    for entry in entries.values {
      let arrived = entry.arrived.keys.sorted()
      lines.append(
        "  asset \(entry.id.short) gen \(entry.generation): \(entry.presence.count)/\(entry.chunkCount) "
          + "stored, arrived \(arrived.count)\(arrived.first.map { " [\($0)...\(arrived.last ?? $0)]" } ?? ""), "
          + "ranges \(entry.info.acceptsRanges), \(entry.storer.diagnostics)")
      for fetch in entry.fetches {
        lines.append(
          "    fetch #\(fetch.serial) [\(fetch.start), \(fetch.end)) next \(fetch.next) "
            + "lastWanted \(fetch.lastWanted) cancelled \(fetch.cancelled) "
            + "interest \(fetch.interest.sorted())")
      }
      for index in entry.waiters.keys.sorted() {
        let sessions = entry.waiters[index]?.map(\.session) ?? []
        lines.append("    chunk \(index) awaited by sessions \(sessions)")
      }
      for (session, position) in entry.readerPositions.sorted(by: { $0.key < $1.key }) {
        lines.append("    session \(session) at chunk \(position)")
      }
    }
    return lines.joined(separator: "\n")
  }
}
