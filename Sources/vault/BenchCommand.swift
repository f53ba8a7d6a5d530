import ArgumentParser
import Foundation
import VaultCore
import VaultCrypto

extension VaultCommand {
  /// `vault bench`: raw cipher speed, the vault's seal/open, import/export against `age`,
  /// random-read latency, export memory and the range loader against a direct download,
  /// measured side by side in one run.
  struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "bench",
      abstract: "Benchmark the vault against openssl speed and age; print (and write) a table.",
      discussion: """
        Runs `openssl speed`, in-process ChaCha20-Poly1305 loops, `vault import`/`export` \
        (in-process and as child processes) and `age -e`/`-d` on one generated file, random \
        4 KiB reads, the peak RSS of `vault export`, and (unless --skip-loader) the range \
        loader reading from a loopback origin against a direct download and curl, warm reads \
        and a player replay, and (unless --skip-serve) `vault serve` against nginx with curl. \
        Uses the published demo key in scratch vaults that are removed \
        at the end. If age, openssl, curl or nginx is missing and this runs as root, it runs \
        `apt-get install -y` for them.
        """)

    @Option(help: "Size of the generated file for import/export and age (default: 1GiB).")
    var size: ByteCount?

    @Option(help: "Seconds for each openssl speed run and each in-process cipher loop.")
    var seconds = 3

    @Option(help: "Number of random 4 KiB reads to time.")
    var reads = 10_000

    @Option(help: "Rounds of vault import/export against age -e/-d; the median is reported.")
    var runs = 5

    @Option(
      help: """
        Directory in which to create the scratch directory (default: the system temporary \
        directory). The scratch directory is removed at the end.
        """)
    var workDir: String?

    @Option(help: "Also write the results as Markdown to this file, e.g. BENCHMARKS.md.")
    var write: String?

    @Flag(help: "Skip the range-loader section (loopback origin, cold/warm reads, player replay).")
    var skipLoader = false

    @Flag(
      help: "Skip the `vault serve` section (stored asset, first byte, cold proxying vs nginx).")
    var skipServe = false

    @Option(help: "Assets in the cache-policy section's vault (open and prune times).")
    var policyAssets = 10_000

    @Option(
      help:
        "Run only this section: `keys` (key rotation, re-encryption, scrypt; BenchKeys.swift) or `shred` (crypto-shredding, lease checks; BenchShred.swift)."
    )
    var only: String?

    /// The --size value in bytes.
    var bytes: Int { size?.value ?? 1 << 30 }

    func validate() throws {
      guard bytes >= 1 << 20 else { throw ValidationError("--size must be at least 1MiB") }
      guard seconds >= 1 else { throw ValidationError("--seconds must be at least 1") }
      guard reads >= 100 else { throw ValidationError("--reads must be at least 100") }
      guard runs >= 1 else { throw ValidationError("--runs must be at least 1") }
      guard policyAssets >= 1 else { throw ValidationError("--policy-assets must be at least 1") }
      guard only == nil || only == "keys" || only == "shred" else {
        throw ValidationError("--only takes `keys` or `shred`")
      }
    }

    func run() throws {
      try reportingErrors {
        let base = workDir ?? FileManager.default.temporaryDirectory.path
        try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        var template = Array("\(base)/vault-bench-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
          throw CLIError(
            "cannot create a scratch directory in \(base): \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        BenchScratch.removeOnExit(directory)
        defer { BenchScratch.remove() }
        if let free = BenchFiles.freeSpace(directory), free < UInt64(bytes) * 4 + (256 << 20) {
          throw CLIError(
            "\(directory) has \(formatBytes(free)) free; --size \(formatBytes(UInt64(bytes))) "
              + "needs about 4 times that")
        }
        if only == "shred" {
          let rows = try ShredBench(
            directory: directory, size: bytes, runs: min(runs, 5),
            status: { FileHandle.standardError.write(Data("vault bench: \($0)\n".utf8)) }
          ).run()
          let markdown = ShredBench.markdown(
            rows, command: BenchFormat.shellLine(CommandLine.arguments))
          print(markdown)
          return
        }
        if only == "keys" {
          let rows = try KeyBench(
            directory: directory, size: bytes, runs: min(runs, 3),
            status: { FileHandle.standardError.write(Data("vault bench: \($0)\n".utf8)) }
          ).run()
          print(KeyBench.markdown(rows, command: BenchFormat.shellLine(CommandLine.arguments)))
          return
        }
        let runner = BenchRunner(
          size: bytes, seconds: seconds, reads: reads, runs: runs, loader: !skipLoader,
          directory: directory, command: BenchFormat.shellLine(CommandLine.arguments))
        runner.policyAssets = policyAssets
        runner.serve = !skipServe
        let report = try runner.run()
        print(report.table())
        if let write {
          try Data(report.markdown().utf8).write(to: URL(fileURLWithPath: write))
          print("\nwrote \(write)")
        }
      }
    }
  }
}

/// The scratch directory, removed at the end or, after Ctrl-C, by the interrupt handler's
/// cleanup list: a 1 GiB run leaves gigabytes behind.
enum BenchScratch {
  nonisolated(unsafe) private static var directory: String?

  static func removeOnExit(_ path: String) {
    directory = path
    InterruptCleanup.add { BenchScratch.remove() }
  }

  /// Held for the whole removal: Ctrl-C's handler and the main thread (whose error the
  /// interrupt caused) may both get here, and whichever exits the process first must not cut
  /// the other's removal short.
  private static let lock = NSLock()

  static func remove() {
    lock.withLock {
      // Children (nginx) write into the directory; stopped first, they recreate nothing.
      BenchChildren.stopAll()
      guard let path = directory else { return }
      directory = nil
      // After Ctrl-C the main thread is still running and may delete or create entries
      // meanwhile, which stops a removal half-way: try again, for at most a second.
      for _ in 0..<20 {
        try? FileManager.default.removeItem(atPath: path)
        if access(path, F_OK) != 0 { break }
        usleep(50_000)
      }
    }
  }
}

/// Runs the benchmark steps in order and collects the rows of the report.
final class BenchRunner {
  let size: Int
  let seconds: Int
  let reads: Int
  let runs: Int
  /// Whether to run the range-loader section.
  let loader: Bool
  let directory: String
  let command: String
  /// Assets in the cache-policy section's vault.
  var policyAssets = 10_000
  /// Whether to run the `vault serve` section.
  var serve = true
  private let status: BenchStatus
  private var commandsRun: [String] = []
  private var gnuTime: String?
  private let chunkSize = VaultFormat.defaultChunkSize
  private let cores = ProcessInfo.processInfo.activeProcessorCount

  init(
    size: Int, seconds: Int, reads: Int, runs: Int, loader: Bool, directory: String,
    command: String
  ) {
    self.size = size
    self.seconds = seconds
    self.reads = reads
    self.runs = runs
    self.loader = loader
    self.directory = directory
    self.command = command
    status = BenchStatus(steps: 10 + runs + (loader ? LoaderBench.runs + 2 : 0) + 12)
  }

  /// One round of the child-process comparison: the vault and age on the same input.
  private struct Round {
    var vaultImport: ChildRun
    var vaultExport: ChildRun
    var ageEncrypt: ChildRun?
    var ageDecrypt: ChildRun?
    /// `vault export -o -` and `age -d` to /dev/null: no file written, no fsync.
    var vaultToNull: ChildRun
    var ageToNull: ChildRun?
    /// Seconds to fsync age's outputs afterwards.
    var ageEncryptSync = 0.0
    var ageDecryptSync = 0.0
  }

  func run() throws -> BenchReport {
    defer { status.finish() }
    let date = Date()
    status.next("looking for openssl and age")
    let openssl = ensureTool("openssl", package: "openssl")
    let age = ensureTool("age", package: "age")
    let ageKeygen = age == nil ? nil : Subprocess.find("age-keygen")
    let opensslVersion = try openssl.map { try text(of: [$0, "version"]) } ?? "not installed"
    let ageVersion = try age.map { try text(of: [$0, "--version"]) }
    let machine = MachineInfo.current(opensslCLI: opensslVersion, age: ageVersion)
    gnuTime = Subprocess.findGNUTime(scratch: directory)
    if machine.debugBuild {
      FileHandle.standardError.write(
        Data("vault bench: this is a debug build; build with -c release for real figures\n".utf8))
    }

    // 1. Raw cipher speed, one core.
    status.next("openssl speed (\(seconds) s + 6 s)")
    var raw64: Double?
    var raw16: Double?
    if let openssl {
      let arguments = [
        openssl, "speed", "-evp", "chacha20-poly1305", "-bytes", "65536", "-seconds",
        "\(seconds)", "-mr",
      ]
      raw64 = OpenSSLSpeed.parse(try checked(arguments).output)[65536]
      let all = [openssl, "speed", "-evp", "chacha20-poly1305", "-seconds", "1", "-mr"]
      raw16 = OpenSSLSpeed.parse(try checked(all).output)[16384]
    }
    let missing = openssl == nil ? "openssl: not installed" : "openssl: output not understood"

    // 2. In-process seal and open: one core, all cores, and single-chunk open latency.
    status.next("in-process seal/open (\(4 * seconds) s)")
    let key = try SymmetricKey.random()
    let duration = Double(seconds)
    let seal1 = try CipherBench.loop(
      sealing: true, key: key, chunkSize: chunkSize, seconds: duration)
    let open1 = try CipherBench.loop(
      sealing: false, key: key, chunkSize: chunkSize, seconds: duration)
    let sealN = try CipherBench.parallel(
      sealing: true, key: key, chunkSize: chunkSize, seconds: duration, threads: cores)
    let openN = try CipherBench.parallel(
      sealing: false, key: key, chunkSize: chunkSize, seconds: duration, threads: cores)
    let nonceSeconds = try CipherBench.nonceCost()
    let openLatencies = try CipherBench.openLatencies(
      key: key, chunkSize: chunkSize, samples: reads)

    // The input, and what plain reads and writes of its size cost.
    status.next("writing the \(formatBytes(UInt64(size))) input")
    let input = try BenchInput()
    let inputPath = directory + "/input.bin"
    try input.write(to: inputPath, size: size)
    let readSeconds = try BenchFiles.timeRead(inputPath)
    try prime()
    let (writeSeconds, syncSeconds) = try BenchFiles.timeWrite(
      directory + "/write-test.bin", size: size)

    // 2 and 4. The vault in-process: import, export, random reads.
    status.next("vault import/export in-process")
    let vaultDirectory = directory + "/vault"
    let vault = try Vault.create(at: vaultDirectory, masterKey: try DemoKey.load())
    try prime()
    var started = BenchClock.now()
    let info = try vault.importFile(
      at: inputPath, name: "bench-inprocess", contentType: "application/octet-stream")
    let importInProcess = BenchClock.now() - started
    let id = try info.idValue
    let exportPath = directory + "/export.bin"
    try prime()
    started = BenchClock.now()
    try vault.export(id, to: exportPath)
    let exportInProcess = BenchClock.now() - started
    try requireIdentical(exportPath, inputPath, what: "in-process export")
    _ = unlink(exportPath)
    status.next("\(reads) random 4 KiB reads")
    let readLatencies = try randomReads(vault: vault, id: id, input: input)
    try vault.remove(id)

    // 3 and 5. `vault import`/`export` as child processes against age, in alternating rounds.
    let executable = Subprocess.currentExecutable()
    let keyPath = directory + "/demo.key"
    try Data(DemoKey.text.utf8).write(to: URL(fileURLWithPath: keyPath))
    _ = chmod(keyPath, 0o600)
    let vaultArguments = ["--vault", vaultDirectory, "--key-file", keyPath]
    var recipient: (identity: String, publicKey: String)?
    if let ageKeygen {
      let identity = directory + "/age-key.txt"
      _ = try checked([ageKeygen, "-o", identity])
      let publicKey = try String(contentsOfFile: identity, encoding: .utf8)
        .split(whereSeparator: \.isNewline)
        .first { $0.hasPrefix("# public key: ") }
        .map { String($0.dropFirst("# public key: ".count)) }
      guard let publicKey else { throw CLIError("age-keygen wrote no public key to \(identity)") }
      recipient = (identity, publicKey)
    }
    var rounds: [Round] = []
    for round in 1...runs {
      status.next("round \(round) of \(runs): vault import/export, age -e/-d")
      let verify = round == 1
      try prime()
      let vaultImport = try checked(
        [executable, "import", inputPath, "--id", "bench-cli"] + vaultArguments, rss: true)
      try prime()
      let vaultExport = try checked(
        [executable, "export", "bench-cli", "-o", exportPath] + vaultArguments, rss: true)
      if verify { try requireIdentical(exportPath, inputPath, what: "`vault export`") }
      _ = unlink(exportPath)
      let vaultToNull = try checked(
        [executable, "export", "bench-cli", "-o", "-"] + vaultArguments, discardOutput: true)
      // Free its pages before age runs, so age writes into the same recycled memory.
      try vault.remove(try vault.resolve("bench-cli"))
      var result = Round(
        vaultImport: vaultImport, vaultExport: vaultExport, vaultToNull: vaultToNull)
      if let age, let recipient {
        let sealed = directory + "/input.bin.age"
        let opened = directory + "/age-out.bin"
        try prime()
        result.ageEncrypt = try checked(
          [age, "-e", "-r", recipient.publicKey, "-o", sealed, inputPath], rss: true)
        result.ageEncryptSync = try BenchFiles.timeSync(sealed)
        try prime()
        result.ageDecrypt = try checked(
          [age, "-d", "-i", recipient.identity, "-o", opened, sealed], rss: true)
        result.ageDecryptSync = try BenchFiles.timeSync(opened)
        if verify { try requireIdentical(opened, inputPath, what: "age -d") }
        _ = unlink(opened)
        result.ageToNull = try checked(
          [age, "-d", "-i", recipient.identity, sealed], discardOutput: true)
        _ = unlink(sealed)
      }
      rounds.append(result)
    }
    let baseline = try checked([executable, "list"] + vaultArguments, rss: true)

    // 6. The range loader against a direct download of the same URL, same client.
    var loaderFigures: LoaderFigures?
    if loader {
      let curl = Subprocess.find("curl")
      let bench = LoaderBench(
        size: size, runs: LoaderBench.runs, directory: directory, input: input,
        inputPath: inputPath, key: try DemoKey.load(), chunkSize: chunkSize)
      loaderFigures = try bench.run(
        step: { status.next($0) }, prime: { try prime() },
        curl: { url in
          guard let curl else { return nil }
          let run = try checked(
            [curl, "-s", "-o", "/dev/null", "-w", "%{speed_download}", url.absoluteString])
          return Double(run.output.trimmingCharacters(in: .whitespacesAndNewlines))
        })
    }

    // 7. Cache policy: index costs, open and prune of a vault of many assets.
    let policy = try PolicyBench(
      assets: policyAssets, directory: directory, key: try DemoKey.load()
    ).run(step: { status.next($0) })

    // 8. `vault serve` against nginx and nginx's slice cache, curl the client of both.
    var serveFigures: ServeFigures?
    var serveMissing: String?
    if serve {
      status.next("looking for curl and nginx")
      // nginx is in /usr/sbin, which a user's PATH often lacks.
      let nginx =
        Subprocess.find("nginx") ?? Subprocess.find("/usr/sbin/nginx")
        ?? ensureTool("nginx", package: "nginx") ?? Subprocess.find("/usr/sbin/nginx")
      if let curl = ensureTool("curl", package: "curl"), let nginx {
        let modules = try Subprocess.run([nginx, "-V"], captureIn: directory)
        serveFigures = try ServeBench(
          size: size, directory: directory, inputPath: inputPath, key: try DemoKey.load(),
          curl: BenchCurl(executable: curl, directory: directory), nginx: nginx,
          slice: (modules.output + modules.errorOutput).contains("http_slice_module")
        ).run(step: { status.next($0) }, prime: { try prime() })
      } else {
        serveMissing = nginx == nil ? "nginx: not installed" : "curl: not installed"
      }
    }

    status.next("report")
    let mb = Double(size)
    func median(_ values: [Double]) -> Double { BenchFormat.quantile(values.sorted(), 0.5) }
    func maxRSS(_ pick: (Round) -> ChildRun?) -> ChildRun? {
      rounds.compactMap(pick).max { $0.maxRSS < $1.maxRSS }
    }
    let importSeconds = median(rounds.map(\.vaultImport.seconds))
    let exportSeconds = median(rounds.map(\.vaultExport.seconds))
    let ageRounds = rounds.filter { $0.ageEncrypt != nil && $0.ageDecrypt != nil }
    let ageEncrypt = ageRounds.isEmpty ? nil : median(ageRounds.compactMap(\.ageEncrypt?.seconds))
    let ageDecrypt = ageRounds.isEmpty ? nil : median(ageRounds.compactMap(\.ageDecrypt?.seconds))
    let ageEncryptSynced =
      ageRounds.isEmpty
      ? nil : median(ageRounds.compactMap { ($0.ageEncrypt?.seconds ?? 0) + $0.ageEncryptSync })
    let ageDecryptSynced =
      ageRounds.isEmpty
      ? nil : median(ageRounds.compactMap { ($0.ageDecrypt?.seconds ?? 0) + $0.ageDecryptSync })
    let readP50 = BenchFormat.quantile(readLatencies, 0.5)
    let openP50 = BenchFormat.quantile(openLatencies, 0.5)

    var rows: [BenchRow] = []
    let label = formatBytes(UInt64(size))
    let of = runs > 1 ? ", median of \(runs)" : ""
    rows.append(
      BenchRow(
        measure: "1. `openssl speed -evp chacha20-poly1305`, 64 KiB, 1 core",
        result: raw64.map(BenchFormat.rate) ?? missing))
    rows.append(
      BenchRow(
        measure: "1. `openssl speed -evp chacha20-poly1305`, 16 KiB, 1 core",
        result: raw16.map(BenchFormat.rate) ?? missing))
    for (name, rate) in [("seal", seal1), ("open", open1)] {
      let ratio = raw64.map { rate.perCPUSecond / $0 }
      rows.append(
        BenchRow(
          measure: "2. \(name), 1 core, ChaChaPoly.Context, 64 KiB chunks",
          result: BenchFormat.rate(rate.perCPUSecond)
            + (ratio.map { " (\(BenchFormat.ratio($0)) openssl)" } ?? ""),
          goal: "≥ 0.85 × openssl", met: ratio.map { $0 >= 0.85 }))
    }
    for (name, rate) in [("seal", sealN), ("open", openN)] {
      rows.append(
        BenchRow(
          measure: "2. \(name), all \(cores) cores, one context per thread",
          result: BenchFormat.rate(rate.perWallSecond)))
    }
    rows.append(
      BenchRow(
        measure: "2. Vault.importFile \(label), in-process, all cores",
        result: BenchFormat.rate(mb / importInProcess)))
    rows.append(
      BenchRow(
        measure: "2. Vault.export \(label), in-process, all cores",
        result: BenchFormat.rate(mb / exportInProcess)))
    let ageMissing = age == nil ? "age: not installed" : "age-keygen: not installed"
    rows.append(
      BenchRow(
        measure: "3. `vault import` \(label) (child process\(of))",
        result: rates(rounds.map(\.vaultImport.seconds)),
        goal: "≥ 2 × age -e" + (ageEncrypt.map { " (\(BenchFormat.rate(2 * mb / $0)))" } ?? ""),
        met: ageEncrypt.map { importSeconds * 2 <= $0 }))
    rows.append(
      BenchRow(
        measure: "3. `vault export` \(label) (child process\(of))",
        result: rates(rounds.map(\.vaultExport.seconds)),
        goal: "≥ 2 × age -d" + (ageDecrypt.map { " (\(BenchFormat.rate(2 * mb / $0)))" } ?? ""),
        met: ageDecrypt.map { exportSeconds * 2 <= $0 }))
    rows.append(
      BenchRow(
        measure: "3. `age -e` \(label), X25519 recipient (child process\(of))",
        result: ageEncrypt == nil
          ? ageMissing : rates(ageRounds.compactMap(\.ageEncrypt?.seconds))))
    rows.append(
      BenchRow(
        measure: "3. `age -d` \(label) (child process\(of))",
        result: ageDecrypt == nil
          ? ageMissing : rates(ageRounds.compactMap(\.ageDecrypt?.seconds))))
    if let ageEncryptSynced, let ageDecryptSynced {
      rows.append(
        BenchRow(
          measure: "3. `age -e` / `age -d` plus an fsync of the output, as the vault does",
          result: BenchFormat.rate(mb / ageEncryptSynced) + " / "
            + BenchFormat.rate(mb / ageDecryptSynced)))
    }
    rows.append(
      BenchRow(
        measure: "3. `vault export -o -` to /dev/null (no file, no fsync\(of))",
        result: rates(rounds.map(\.vaultToNull.seconds))))
    let nullRounds = rounds.compactMap(\.ageToNull?.seconds)
    rows.append(
      BenchRow(
        measure: "3. `age -d` to /dev/null (no file\(of))",
        result: nullRounds.isEmpty ? ageMissing : rates(nullRounds)))
    rows.append(
      BenchRow(
        measure: "4. random 4 KiB read via AssetReader, p50", result: BenchFormat.micros(readP50),
        goal: "≤ 2 × one chunk open (\(BenchFormat.micros(2 * openP50)))",
        met: readP50 <= 2 * openP50))
    rows.append(
      BenchRow(
        measure: "4. random 4 KiB read via AssetReader, p99",
        result: BenchFormat.micros(BenchFormat.quantile(readLatencies, 0.99))))
    rows.append(
      BenchRow(
        measure: "4. one 64 KiB chunk open (Context.open, in memory), p50",
        result: BenchFormat.micros(openP50)))
    let exportRSS = maxRSS(\.vaultExport) ?? rounds[0].vaultExport
    let exportFits = exportRSS.maxRSS <= 64 << 20
    rows.append(
      BenchRow(
        measure: "5. peak RSS of `vault export` \(label) (child process)", result: rss(exportRSS),
        goal: "≤ 64 MiB", met: exportFits || exportRSS.maxRSSIsExact ? exportFits : nil))
    rows.append(
      BenchRow(
        measure: "5. peak RSS of `vault import`",
        result: (maxRSS(\.vaultImport)).map(rss) ?? "?"))
    rows.append(
      BenchRow(
        measure: "5. peak RSS of `vault list` (runtime, libraries, index)",
        result: rss(baseline)))
    if let encrypt = maxRSS(\.ageEncrypt), let decrypt = maxRSS(\.ageDecrypt) {
      rows.append(
        BenchRow(
          measure: "5. peak RSS of `age -e` / `age -d`",
          result: "\(rss(encrypt)) / \(rss(decrypt))"))
    }
    if let loaderFigures { rows += loaderFigures.rows(exportRate: mb / exportInProcess) }
    rows += policy.rows()
    if let serveFigures { rows += serveFigures.rows() }
    if let serveMissing {
      rows.append(
        BenchRow(
          measure: "8. `vault serve` against nginx (stored asset, slice cache, first byte, cold "
            + "proxying)", result: serveMissing))
    }
    rows.append(
      BenchRow(
        measure: "plain read of the input (page cache, 4 MiB reads)",
        result: BenchFormat.rate(mb / readSeconds)))
    rows.append(
      BenchRow(
        measure: "plain write of \(label) (4 MiB writes, no fsync)",
        result: BenchFormat.rate(mb / writeSeconds)))
    rows.append(
      BenchRow(
        measure: "fsync of that file", result: BenchFormat.seconds(syncSeconds)))

    let interpretation = BenchModel.lines(
      BenchFigures(
        size: mb, read: readSeconds, write: writeSeconds, sync: syncSeconds,
        sealAll: sealN.perWallSecond, openAll: openN.perWallSecond, seal1: seal1, open1: open1,
        nonce: nonceSeconds, raw64: raw64, importSeconds: importSeconds,
        exportSeconds: exportSeconds,
        importInProcess: importInProcess, ageEncrypt: ageEncrypt, ageDecrypt: ageDecrypt,
        exportToNull: median(rounds.map(\.vaultToNull.seconds)),
        ageDecryptToNull: nullRounds.isEmpty ? nil : median(nullRounds),
        readP50: readP50, openP50: openP50, exportRSS: exportRSS.maxRSS,
        baselineRSS: baseline.maxRSS))
    let loaderLines =
      loaderFigures.map {
        LoaderModel.lines(
          $0, exportRate: mb / exportInProcess, sealRate: sealN.perWallSecond, cores: cores)
      } ?? []
    commandsRun += serveFigures?.commands ?? []
    var unique: [String] = []
    for line in commandsRun where !unique.contains(line) { unique.append(line) }
    return BenchReport(
      command: command, machine: machine, date: date, rows: rows, commandsRun: unique,
      notes: notes() + (loaderFigures.map(LoaderModel.notes) ?? []) + (serveFigures?.notes() ?? []),
      interpretation: interpretation + loaderLines + policy.lines()
        + (serveFigures?.lines(openRate: open1.perCPUSecond) ?? []))
  }

  /// Writes and deletes a file a little larger than --size, untimed, right before a timed
  /// step that writes that much. A VM that hands freed memory back to its host (this one does,
  /// after about two seconds) makes the next write into it several times slower (first
  /// touch); primed, the step reuses memory freed a moment ago, like every other step.
  private func prime() throws {
    _ = try BenchFiles.timeWrite(directory + "/prime.bin", size: size + (16 << 20), sync: false)
  }

  /// The median rate over rounds with the range, e.g. `1038 MB/s (980–1100)`.
  private func rates(_ seconds: [Double]) -> String {
    BenchFormat.rates(bytes: size, seconds: seconds)
  }

  /// `reads` random 4 KiB reads, each in a different chunk than the one before and inside one
  /// chunk, so each opens exactly one chunk; returns the sorted latencies.
  private func randomReads(vault: Vault, id: AssetID, input: BenchInput) throws -> [Double] {
    let reader = try vault.reader(for: id)
    let count = 4096
    let fullChunks = size / chunkSize
    let warmUp = 100
    var offsets: [UInt64] = []
    var previous = -1
    for _ in 0..<(reads + warmUp) {
      var chunk = Int.random(in: 0..<fullChunks)
      if fullChunks > 1 {
        while chunk == previous { chunk = Int.random(in: 0..<fullChunks) }
      }
      previous = chunk
      offsets.append(UInt64(chunk * chunkSize + Int.random(in: 0...(chunkSize - count))))
    }
    var latencies: [Double] = []
    latencies.reserveCapacity(reads)
    for (k, offset) in offsets.enumerated() {
      let start = BenchClock.now()
      let bytes = try reader.read(offset: offset, count: count)
      let elapsed = BenchClock.now() - start
      if k >= warmUp { latencies.append(elapsed) }
      guard bytes == input.bytes(at: offset, count: count) else {
        throw CLIError("random read at offset \(offset) returned wrong bytes")
      }
    }
    guard reader.chunksOpened == offsets.count || fullChunks == 1 else {
      throw CLIError("\(offsets.count) random reads opened \(reader.chunksOpened) chunks")
    }
    return latencies.sorted()
  }

  /// Runs a child, records its command line, and fails on a non-zero status; with `rss`,
  /// under GNU time if it is installed.
  private func checked(_ arguments: [String], rss: Bool = false, discardOutput: Bool = false)
    throws -> ChildRun
  {
    let run = try Subprocess.run(
      arguments, captureIn: directory, gnuTime: rss ? gnuTime : nil,
      discardOutput: discardOutput)
    commandsRun.append(shortLine(run.arguments) + (discardOutput ? " > /dev/null" : ""))
    try run.check()
    return run
  }

  /// A peak RSS for the table: exact from GNU time, else an upper bound.
  private func rss(_ run: ChildRun) -> String {
    (run.maxRSSIsExact ? "" : "≤ ") + BenchFormat.mebibytes(run.maxRSS)
  }

  /// The first line of a command's output.
  private func text(of arguments: [String]) throws -> String {
    let run = try Subprocess.run(arguments, captureIn: directory)
    let output = run.output.isEmpty ? run.errorOutput : run.output
    return output.split(whereSeparator: \.isNewline).first.map(String.init) ?? "unknown"
  }

  /// A command line with the program as its name and the scratch directory as `$WORK`.
  private func shortLine(_ arguments: [String]) -> String {
    var shown = arguments
    // Under GNU time the command proper starts after `time -f %M -o FILE`.
    let wrapped = gnuTime != nil && shown.first == gnuTime && shown.count > 5
    for k in [0, 5] where k < shown.count && (k == 0 || wrapped) {
      shown[k] = URL(fileURLWithPath: shown[k]).lastPathComponent
    }
    if wrapped { shown.removeSubrange(3...4) }  // `-o FILE`: where time puts the figure
    return BenchFormat.shellLine(shown).replacingOccurrences(of: directory, with: "$WORK")
  }

  /// The path of `program`, after `apt-get install -y package` if it is missing and this
  /// process is root; nil if it is still missing.
  private func ensureTool(_ program: String, package: String) -> String? {
    if let path = Subprocess.find(program) { return path }
    guard geteuid() == 0, let aptGet = Subprocess.find("apt-get") else {
      FileHandle.standardError.write(Data("vault bench: \(program) is not installed\n".utf8))
      return nil
    }
    FileHandle.standardError.write(
      Data("vault bench: \(program) is missing; running apt-get install -y \(package)\n".utf8))
    let result = try? Subprocess.run([aptGet, "install", "-y", package], captureIn: nil)
    if let result, result.status != 0 {
      FileHandle.standardError.write(
        Data("vault bench: apt-get install -y \(package) failed (status \(result.status))\n".utf8))
    }
    return Subprocess.find(program)
  }

  private func requireIdentical(_ path: String, _ original: String, what: String) throws {
    guard try BenchFiles.identical(path, original) else {
      throw CLIError("\(what) produced a file that differs from the input")
    }
  }

  private func notes() -> [String] {
    [
      "All files are in the page cache (warm) for the vault and age alike: the input is "
        + "written and fsynced before any timing, and dropping the page cache is not possible "
        + "here. Both read a warm input; outputs go to the same file system.",
      "`openssl speed` reports bytes per user-CPU second; the one-core in-process figures are "
        + "bytes per thread-CPU second, the same basis (on an idle machine both equal wall time). "
        + "All other figures are wall time.",
      "`openssl speed -evp chacha20-poly1305` without -aead encrypts one long stream (one "
        + "EVP update per block; no per-block nonce, AAD or tag): the cipher's raw speed.",
      "In-process loops seal/open one 64 KiB chunk repeatedly with a fresh RAND_bytes nonce "
        + "and a 51-byte AAD, as the vault does per chunk; \"all cores\" runs \(cores) such "
        + "loops at once, each with its own context.",
      "`vault import`/`vault export` and `age` are timed as child processes from spawn to exit "
        + "(wait4), so process start-up counts for both, in \(runs) rounds of vault import, vault "
        + "export, age -e, age -d; the tables give the median time and the largest peak RSS. They run under GNU time `-f %M`, whose "
        + "figure is the child's own peak RSS (wait4's ru_maxrss of a child spawned by this "
        + "process would also count this process's RSS, and is shown as an upper bound \"≤\" "
        + "when GNU time is missing).",
      "The vault fsyncs its asset file on import and the output file on export; age fsyncs "
        + "nothing, so the age rows with fsync add the time to fsync age's output afterwards.",
      "Right before each timed step that writes a file of --size (plain write, vault import, "
        + "vault export, age -e, age -d), an untimed file of that size is written and deleted, "
        + "so every step writes into memory freed a moment ago: a VM that hands freed memory back "
        + "to its host makes writes into such memory several times slower, hitting whichever "
        + "step comes after a pause. Results with a range give the median over rounds "
        + "(slowest–fastest MB/s).",
      "Random reads: \(reads) reads of 4 KiB at random offsets, each inside one chunk and in a "
        + "different chunk than the read before, so every read reads one 64 KiB slot (pread) and "
        + "opens it; latency is wall time per `read(offset:count:)`; every result is checked.",
      "Every export and decryption is compared byte for byte with the input. Keys: the "
        + "published demo key (vault) and a fresh X25519 identity (age).",
    ]
  }
}

/// What the interpretation lines are computed from. Times are in seconds, rates in bytes
/// per second.
struct BenchFigures {
  let size: Double
  /// Reading the input whole, writing a file of its size, and fsyncing that file.
  let read: Double
  let write: Double
  let sync: Double
  /// All-core in-process seal and open rates.
  let sealAll: Double
  let openAll: Double
  let seal1: CipherRate
  let open1: CipherRate
  /// CPU seconds of one 12-byte RAND_bytes nonce.
  let nonce: Double
  let raw64: Double?
  /// Child-process import and export, in-process import, and age.
  let importSeconds: Double
  let exportSeconds: Double
  let importInProcess: Double
  let ageEncrypt: Double?
  let ageDecrypt: Double?
  /// `vault export -o -` and `age -d` with stdout on /dev/null.
  let exportToNull: Double
  let ageDecryptToNull: Double?
  let readP50: Double
  let openP50: Double
  let exportRSS: Int
  let baselineRSS: Int
}

/// A serial model of import and export: each 4 MiB batch is read, then sealed or opened on
/// all cores, then written, and the file is fsynced at the end; the interpretation compares
/// it with what was measured.
enum BenchModel {
  static func lines(_ f: BenchFigures) -> [String] {
    var lines: [String] = []
    if let raw64 = f.raw64 {
      let sealRatio = f.seal1.perCPUSecond / raw64
      let openRatio = f.open1.perCPUSecond / raw64
      let chunkSeal = 65_536 / f.seal1.perCPUSecond
      lines.append(
        "Cipher: one core seals at \(BenchFormat.ratio(sealRatio)) and opens at "
          + "\(BenchFormat.ratio(openRatio)) of `openssl speed`, which (without -aead) streams one "
          + "long message: no per-block nonce, AAD or tag, all of which the vault pays per chunk. "
          + "Sealing also draws a fresh 12-byte RAND_bytes nonce per chunk: "
          + "\(BenchFormat.micros(f.nonce)) measured alone, "
          + "\(Int((f.nonce / chunkSeal * 100).rounded()))% of a chunk's "
          + "\(BenchFormat.micros(chunkSeal)); opening draws none.")
    }
    let seal = f.size / f.sealAll
    let open = f.size / f.openAll
    let sealModel = f.read + seal + f.write + f.sync
    let openModel = f.read + open + f.write + f.sync
    lines.append(
      "Import and export do one 4 MiB batch at a time: read it, then seal or open it on all "
        + "cores, then write it, and fsync the file at the end; nothing overlaps. Measured alone, "
        + "read \(BenchFormat.seconds(f.read)) + seal \(BenchFormat.seconds(seal)) + write "
        + "\(BenchFormat.seconds(f.write)) + fsync \(BenchFormat.seconds(f.sync)) = "
        + "\(BenchFormat.seconds(sealModel)) against \(BenchFormat.seconds(f.importSeconds)) for "
        + "`vault import` (\(BenchFormat.seconds(f.importInProcess)) in-process); export: "
        + "\(BenchFormat.seconds(openModel)) against \(BenchFormat.seconds(f.exportSeconds)). "
        + "The cipher is only \(Int(seal / sealModel * 100))% of it; the cores idle while "
        + "reading, writing and syncing.")
    if let ageEncrypt = f.ageEncrypt, let ageDecrypt = f.ageDecrypt {
      let withoutSync = sealModel - f.sync
      let ratio = ageEncrypt / max(withoutSync, 1e-9)
      let remedy =
        ratio >= 2
        ? "so hiding the fsync (writing back early, while working) is what the 2 × goal needs "
          + "most; pipelining the batches would add margin."
        : "so 2 × age needs both: the fsync hidden (written back early, while working) and the "
          + "batches pipelined so the cores seal while the previous batch is written."
      lines.append(
        "age (\(BenchFormat.seconds(ageEncrypt)) / \(BenchFormat.seconds(ageDecrypt))) seals on "
          + "one core and never fsyncs. The vault's fsync of the whole file is "
          + "\(Int(f.sync / max(f.importSeconds, 1e-9) * 100))% of the import time; without it the "
          + "serial sum would be \(BenchFormat.seconds(withoutSync)) = "
          + "\(BenchFormat.ratio(ratio)) age -e, " + remedy)
    }
    if let ageNull = f.ageDecryptToNull {
      let ratio = ageNull / max(f.exportToNull, 1e-9)
      let vaultFile = f.exportSeconds - f.exportToNull
      let ageFile = (f.ageDecrypt ?? ageNull) - ageNull
      lines.append(
        "To /dev/null (no output file), export takes \(BenchFormat.seconds(f.exportToNull)) and "
          + "age -d \(BenchFormat.seconds(ageNull)), \(BenchFormat.ratio(ratio))"
          + (ratio >= 2 ? ": the read-and-open path clears 2 × age by itself. " : ". ")
          + "Writing the file adds \(BenchFormat.seconds(vaultFile)) to export (with its fsync) and "
          + "\(BenchFormat.seconds(ageFile)) to age -d (without one); the ranges above show how "
          + "much writing a file varies here.")
    }
    lines.append(
      "A random 4 KiB read (p50 \(BenchFormat.micros(f.readP50))) is one pread of a 64 KiB slot "
        + "from the page cache plus one open (\(BenchFormat.micros(f.openP50)) when the chunk is "
        + "already in CPU cache): \(BenchFormat.ratio(f.readP50 / max(f.openP50, 1e-9))) an open.")
    lines.append(
      "Export peaks at \(BenchFormat.mebibytes(f.exportRSS)), "
        + "\(BenchFormat.mebibytes(f.exportRSS - f.baselineRSS)) more than `vault list` "
        + "(runtime, libraries, index): the batch buffers, whatever the asset size.")
    return lines
  }
}
