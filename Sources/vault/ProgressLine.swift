import Foundation
import VaultCore

/// A progress line on stderr when stderr is a terminal; silent otherwise.
final class ProgressLine {
  private let label: String
  private let enabled: Bool
  private let start = Date()
  private var lastDraw = Date.distantPast

  init(_ label: String) {
    self.label = label
    enabled = isatty(STDERR_FILENO) == 1
  }

  func update(_ progress: OperationProgress) {
    guard enabled else { return }
    let now = Date()
    guard now.timeIntervalSince(lastDraw) >= 0.1 else { return }
    lastDraw = now
    let elapsed = max(now.timeIntervalSince(start), 0.001)
    let rate = Double(progress.bytesDone) / elapsed
    var line = "\r\(label) \(formatBytes(progress.bytesDone))"
    if let total = progress.bytesTotal, total > 0 {
      let percent = Int(Double(progress.bytesDone) * 100 / Double(total))
      line += " / \(formatBytes(total)) (\(percent)%)"
    }
    line += "  \(formatBytes(UInt64(rate)))/s   "
    FileHandle.standardError.write(Data(line.utf8))
  }

  func finish() {
    guard enabled, lastDraw != .distantPast else { return }
    FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
  }
}

func formatBytes(_ bytes: UInt64) -> String {
  let units = ["B", "KiB", "MiB", "GiB", "TiB"]
  var value = Double(bytes)
  var unit = 0
  while value >= 1024 && unit < units.count - 1 {
    value /= 1024
    unit += 1
  }
  return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
}
