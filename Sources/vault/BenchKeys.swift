import Dispatch
import Foundation
import VaultCore
import VaultCrypto

/// `vault bench --only keys`: the key rotation figures of issue 5.
///
/// - master key rotation of 10,000 assets of 1 KiB and of 10,000 assets of 1 MiB, in
///   process (`Vault.rotateMasterKey`): rotation rewraps keys only, so both should take
///   well under a second and about the same time;
/// - re-encryption of one asset of `size` bytes against importing it (median of `runs`);
/// - opening a scrypt key file at the default parameters (N = 2^17, r = 8, p = 1).
struct KeyBench {
  let directory: String
  let size: Int
  let runs: Int
  var assets = 10_000
  /// Timed rotations per vault (the median is reported).
  var rotations = 5
  let status: (String) -> Void

  /// Runs every step and returns the rows of the table.
  func run() throws -> [BenchRow] {
    var rows: [BenchRow] = []
    var vaults = [try filledVault(assetSize: 1 << 10), try filledVault(assetSize: 1 << 20)]
    // Alternate the two vaults' rotations, so a load change on the shared machine hits both.
    var samples: [[Double]] = [[], []]
    for round in 1...rotations {
      for k in 0..<2 {
        status("rotating \(assets) asset keys, vault \(k + 1) of 2 (\(round) of \(rotations))")
        let (seconds, rotated) = try rotate(vaults[k])
        samples[k].append(seconds)
        vaults[k] = rotated
      }
    }
    for vault in vaults { try? FileManager.default.removeItem(atPath: vault.directory) }
    let small = BenchFormat.quantile(samples[0].sorted(), 0.5)
    let large = BenchFormat.quantile(samples[1].sorted(), 0.5)
    let goal = "< 1 s"
    rows.append(
      BenchRow(
        measure:
          "Rotate master key, \(assets) assets of 1 KiB (in-process, median of \(rotations))",
        result: BenchFormat.seconds(small), goal: goal, met: small < 1))
    rows.append(
      BenchRow(
        measure:
          "Rotate master key, \(assets) assets of 1 MiB (in-process, median of \(rotations))",
        result: BenchFormat.seconds(large), goal: goal, met: large < 1))
    let spread = max(small, large) / max(min(small, large), 1e-9)
    rows.append(
      BenchRow(
        measure: "Rotation time, 1 MiB assets ÷ 1 KiB assets",
        result: BenchFormat.ratio(large / small),
        goal: "within 1.5× either way", met: spread <= 1.5))

    let times = try reencryption()
    let label = formatBytes(UInt64(size))
    for (how, importSeconds, reencryptSeconds) in [
      ("in-process", times.importInProcess, times.reencryptInProcess),
      ("`vault import` vs `vault key rotate --reencrypt`", times.importCLI, times.reencryptCLI),
    ] {
      rows.append(
        BenchRow(
          measure: "Import \(label), \(how) (median of \(runs))",
          result: BenchFormat.rate(Double(size) / importSeconds)))
      rows.append(
        BenchRow(
          measure: "Re-encrypt \(label), \(how) (median of \(runs))",
          result: BenchFormat.rate(Double(size) / reencryptSeconds)))
      let ratio = importSeconds / reencryptSeconds
      rows.append(
        BenchRow(
          measure: "Re-encryption ÷ import throughput, \(how)", result: BenchFormat.ratio(ratio),
          goal: "≥ 0.80×", met: ratio >= 0.8))
    }

    let scrypt = try scryptOpen()
    rows.append(
      BenchRow(
        measure: "Open a scrypt key file, N=2^17 r=8 p=1 (median of 3)",
        result: BenchFormat.seconds(scrypt)))
    return rows
  }

  /// Fills a vault with `assets` assets of `assetSize` bytes (4 importers at once).
  private func filledVault(assetSize: Int) throws -> Vault {
    let path = directory + "/rotate-\(assetSize)"
    let vault = try Vault.create(at: path, masterKey: try DemoKey.load())
    let source = directory + "/source-\(assetSize).bin"
    try Data(try BenchInput().bytes(at: 0, count: assetSize)).write(
      to: URL(fileURLWithPath: source))
    status("importing \(assets) assets of \(formatBytes(UInt64(assetSize)))")
    let failures = LockedErrors()
    let lanes = 4
    let count = assets
    DispatchQueue.concurrentPerform(iterations: lanes) { lane in
      var i = lane
      while i < count {
        do {
          try vault.importFile(at: source, name: "asset-\(i)")
        } catch {
          failures.record(error)
          return
        }
        i += lanes
      }
    }
    if let error = failures.first { throw error }
    return vault
  }

  /// Times one master key rotation, then retires the old key (untimed), so every timed
  /// rotation starts from one active key, as a first rotation does.
  private func rotate(_ vault: Vault) throws -> (Double, Vault) {
    let newKey = try MasterKey.generate()
    let started = BenchClock.now()
    let rotated = try vault.rotateMasterKey(to: newKey)
    let seconds = BenchClock.now() - started
    guard try rotated.keyStatus().keys.first?.assets == assets else {
      throw CLIError("rotation did not rewrap \(assets) keys")
    }
    try rotated.retireKey(vault.keyID)
    return (seconds, rotated)
  }

  /// Median seconds to import `size` bytes and to re-encrypt them, round by round.
  private func reencryption() throws -> ReencryptionTimes {
    let input = directory + "/keys-input.bin"
    try BenchInput().write(to: input, size: size)
    let vaultPath = directory + "/reencrypt"
    let vault = try Vault.create(at: vaultPath, masterKey: try DemoKey.load())
    let keyPath = directory + "/keys-demo.key"
    try Data(DemoKey.text.utf8).write(to: URL(fileURLWithPath: keyPath))
    _ = chmod(keyPath, 0o600)
    let executable = Subprocess.currentExecutable()
    let options = ["--vault", vaultPath, "--key-file", keyPath]
    var imports: [Double] = []
    var reencryptions: [Double] = []
    var importsCLI: [Double] = []
    var reencryptionsCLI: [Double] = []
    for round in 1...runs {
      status("round \(round) of \(runs): import and re-encrypt \(formatBytes(UInt64(size)))")
      try prime()
      var started = BenchClock.now()
      let info = try vault.importFile(at: input, name: "round-\(round)")
      imports.append(BenchClock.now() - started)
      let id = try vault.resolve("round-\(round)")
      try prime()
      started = BenchClock.now()
      let summary = try vault.reencrypt(assets: [id])
      reencryptions.append(BenchClock.now() - started)
      guard summary.bytes == info.size else {
        throw CLIError("re-encryption covered \(summary.bytes) of \(info.size) bytes")
      }
      try vault.remove(id)
      // The same as child processes, spawn to exit, as a user runs them.
      status("round \(round) of \(runs): vault import and vault key rotate --reencrypt")
      let name = "cli-round-\(round)"
      try prime()
      let imported = try Subprocess.run(
        [executable, "import", input, "--id", name] + options, captureIn: directory)
      try imported.check()
      try prime()
      let reencrypted = try Subprocess.run(
        [executable, "key", "rotate", "--reencrypt", name] + options, captureIn: directory)
      try reencrypted.check()
      importsCLI.append(imported.seconds)
      reencryptionsCLI.append(reencrypted.seconds)
      try vault.remove(try vault.resolve(name))
    }
    _ = unlink(input)
    let median = { (values: [Double]) in BenchFormat.quantile(values.sorted(), 0.5) }
    return ReencryptionTimes(
      importInProcess: median(imports), reencryptInProcess: median(reencryptions),
      importCLI: median(importsCLI), reencryptCLI: median(reencryptionsCLI))
  }

  /// Median seconds of the re-encryption comparison.
  private struct ReencryptionTimes {
    var importInProcess: Double
    var reencryptInProcess: Double
    var importCLI: Double
    var reencryptCLI: Double
  }

  /// Writes and deletes an untimed file of the measured size right before a timed step, as
  /// the main bench does, so import and re-encryption both write into memory freed a
  /// moment ago (a VM that returns freed memory to its host makes the first writes slow).
  private func prime() throws {
    _ = try BenchFiles.timeWrite(directory + "/prime.bin", size: size + (16 << 20), sync: false)
  }

  /// Median seconds to read a passphrase-protected key file at the default scrypt cost.
  private func scryptOpen() throws -> Double {
    status("scrypt key file open")
    let path = directory + "/scrypt.key"
    let passphrase = Array("correct horse battery staple".utf8)
    try KeyFile.write(try MasterKey.generate(), to: path, passphrase: passphrase)
    var samples: [Double] = []
    for _ in 0..<3 {
      let started = BenchClock.now()
      _ = try KeyFile.read(at: path, passphrase: { passphrase })
      samples.append(BenchClock.now() - started)
    }
    return BenchFormat.quantile(samples.sorted(), 0.5)
  }

  /// The rows as a Markdown section for BENCHMARKS.md.
  static func markdown(_ rows: [BenchRow], command: String) -> String {
    var md = "## Key rotation\n\nReproduce with:\n\n```sh\n\(command)\n```\n\n"
    md += "| Measure | Result | Goal | Met |\n|---|---:|---|:-:|\n"
    for row in rows {
      md += "| \(row.measure) | \(row.result) | \(row.goal) | \(row.metText) |\n"
    }
    return md
  }
}

/// The first error of several importer threads.
private final class LockedErrors: @unchecked Sendable {
  private let lock = NSLock()
  private var error: (any Error)?

  func record(_ error: any Error) {
    lock.withLock {
      if self.error == nil { self.error = error }
    }
  }

  var first: (any Error)? { lock.withLock { error } }
}
