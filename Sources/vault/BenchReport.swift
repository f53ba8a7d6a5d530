import Foundation

/// One line of the results table.
struct BenchRow {
  /// What was measured.
  let measure: String
  /// The figure, formatted.
  let result: String
  /// The goal, or "—" for a reference figure.
  var goal = "—"
  /// Whether the goal was met; nil when there is no goal or it could not be judged.
  var met: Bool?

  var metText: String {
    switch met {
    case .some(true): return "yes"
    case .some(false): return "**no**"
    case .none: return goal == "—" ? "" : "n/a"
    }
  }
}

/// Everything `vault bench` prints and writes: the machine, the command lines it ran, the
/// table, notes and interpretation.
struct BenchReport {
  /// The `vault bench` command line as typed.
  let command: String
  let machine: MachineInfo
  let date: Date
  let rows: [BenchRow]
  /// The external and child command lines that produced figures.
  let commandsRun: [String]
  /// How the figures were taken.
  let notes: [String]
  /// What limits the numbers.
  let interpretation: [String]

  /// The plain-text table for the terminal.
  func table() -> String {
    let header = ["Measure", "Result", "Goal", "Met"]
    let cells = rows.map {
      [$0.measure, $0.result, $0.goal, $0.met.map { $0 ? "yes" : "NO" } ?? ""]
    }
    var widths = header.map(\.count)
    for row in cells {
      for (k, cell) in row.enumerated() { widths[k] = max(widths[k], cell.count) }
    }
    func line(_ row: [String]) -> String {
      row.enumerated().map {
        $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0)
      }
      .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
    var out = [line(header), line(widths.map { String(repeating: "-", count: $0) })]
    out += cells.map(line)
    out.append("")
    out += interpretation
    return out.joined(separator: "\n")
  }

  /// The Markdown document for `--write`.
  func markdown() -> String {
    var md = "# Benchmarks\n\n"
    md += "Written by `vault bench` on \(JSONOutput.iso8601(date)). Reproduce with:\n\n"
    md += "```sh\n\(command)\n```\n\n"
    md += "## Machine\n\n"
    md += "| | |\n|---|---|\n"
    md += "| CPU | \(machine.cpuModel) |\n"
    md += "| nproc | \(machine.processors) |\n"
    md += "| Memory | \(formatBytes(machine.memory)) |\n"
    md += "| Kernel | \(machine.kernel) |\n"
    md += "| OpenSSL (CLI) | \(machine.opensslCLI) |\n"
    md += "| libcrypto in `vault` | \(machine.libcrypto) |\n"
    md += "| age | \(machine.age ?? "not installed") |\n"
    md += "| Build | \(machine.debugBuild ? "debug (figures not representative)" : "release") |\n"
    md += "| Load average at start | \(String(format: "%.2f", machine.loadAverage)) |\n\n"
    md += "## Results\n\n"
    md += "MB/s is 10⁶ bytes per second; µs is microseconds.\n\n"
    md += "| Measure | Result | Goal | Met |\n|---|---:|---|:-:|\n"
    for row in rows {
      md += "| \(row.measure) | \(row.result) | \(row.goal) | \(row.metText) |\n"
    }
    md += "\n## Interpretation\n\n"
    md += interpretation.map { "- \($0)" }.joined(separator: "\n") + "\n"
    md += "\n## How the figures were taken\n\n"
    md += notes.map { "- \($0)" }.joined(separator: "\n") + "\n"
    md += "\nCommands run (paths shortened to their names):\n\n```sh\n"
    md += commandsRun.joined(separator: "\n") + "\n```\n"
    return md
  }
}

/// Number formats used in the report.
enum BenchFormat {
  /// Bytes per second as MB/s (10⁶ bytes).
  static func rate(_ bytesPerSecond: Double) -> String {
    let mb = bytesPerSecond / 1e6
    return mb >= 100 ? String(format: "%.0f MB/s", mb) : String(format: "%.1f MB/s", mb)
  }

  /// The median rate of `bytes` over rounds with the range, e.g. `1038 MB/s (980–1100)`.
  static func rates(bytes: Int, seconds: [Double]) -> String {
    let sorted = seconds.sorted()
    let median = rate(Double(bytes) / max(quantile(sorted, 0.5), 1e-9))
    guard sorted.count > 1, let fastest = sorted.first, let slowest = sorted.last else {
      return median
    }
    let (low, high) = (Double(bytes) / slowest / 1e6, Double(bytes) / fastest / 1e6)
    return median + String(format: " (%.0f–%.0f)", low, high)
  }

  /// Seconds as microseconds.
  static func micros(_ seconds: Double) -> String {
    let us = seconds * 1e6
    return us >= 100 ? String(format: "%.0f µs", us) : String(format: "%.1f µs", us)
  }

  /// Seconds with two decimals.
  static func seconds(_ seconds: Double) -> String { String(format: "%.2f s", seconds) }

  /// A ratio like `0.93×`.
  static func ratio(_ value: Double) -> String { String(format: "%.2f×", value) }

  /// Bytes as MiB.
  static func mebibytes(_ bytes: Int) -> String {
    String(format: "%.1f MiB", Double(bytes) / 1_048_576)
  }

  /// The value at quantile `q` of sorted samples (nearest rank).
  static func quantile(_ sorted: [Double], _ q: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
  }

  /// A command line with arguments quoted for a POSIX shell where needed.
  static func shellLine(_ arguments: [String]) -> String {
    arguments.map { argument in
      let safe = argument.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:@%+,".contains($0) }
      return safe && !argument.isEmpty
        ? argument : "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }.joined(separator: " ")
  }
}
