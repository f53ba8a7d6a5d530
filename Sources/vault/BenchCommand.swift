import ArgumentParser
import Foundation
import VaultCore
import VaultCrypto

extension VaultCommand {
  /// `vault bench`: raw cipher speed, the vault's seal/open, import/export against `age`,
  /// random-read latency and export memory, measured side by side in one run.
  struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "bench",
      abstract: "Benchmark the vault against openssl speed and age; print (and write) a table.",
      discussion: """
        Runs `openssl speed`, in-process ChaCha20-Poly1305 loops, `vault import`/`export` \
        (in-process and as child processes) and `age -e`/`-d` on one generated file, random \
        4 KiB reads, and the peak RSS of `vault export`. Uses the published demo key in a \
        scratch vault that is removed at the end. If age or openssl is missing and this runs \
        as root, it runs `apt-get install -y` for them.
        """)

    @Option(help: "Size of the generated file for import/export and age, e.g. 1GiB or 256MiB.")
    var size = ByteCount(1 << 30)

    @Option(help: "Seconds for each openssl speed run and each in-process cipher loop.")
    var seconds = 3

    @Option(help: "Number of random 4 KiB reads to time.")
    var reads = 10_000

    @Option(
      help: """
        Directory in which to create the scratch directory (default: the system temporary \
        directory). The scratch directory is removed at the end.
        """)
    var workDir: String?

    @Option(help: "Also write the results as Markdown to this file, e.g. BENCHMARKS.md.")
    var write: String?

    func validate() throws {
      guard size.value >= 1 << 20 else { throw ValidationError("--size must be at least 1MiB") }
      guard seconds >= 1 else { throw ValidationError("--seconds must be at least 1") }
      guard reads >= 100 else { throw ValidationError("--reads must be at least 100") }
    }

    func run() throws {
      try reportingErrors {
        let base = workDir ?? FileManager.default.temporaryDirectory.path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        var template = Array("\(base)/vault-bench-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
          throw CLIError("cannot create a scratch directory in \(base): \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        if let free = BenchFiles.freeSpace(directory), free < UInt64(size.value) * 4 + (256 << 20) {
          throw CLIError(
            "\(directory) has \(formatBytes(free)) free; --size \(formatBytes(UInt64(size.value))) "
              + "needs about 4 times that")
        }
        let runner = BenchRunner(
          size: size.value, seconds: seconds, reads: reads, directory: directory,
          command: BenchFormat.shellLine(CommandLine.arguments))
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

/// Runs the benchmark steps in order and collects the rows of the report.
final class BenchRunner {
  let size: Int
  let seconds: Int
  let reads: Int
  let directory: String
  let command: String
  private let status = BenchStatus(steps: 9)
  private var rows: [BenchRow] = []
  private var commandsRun: [String] = []
  private var interpretation: [String] = []
  private var gnuTime: String?
  private let chunkSize = VaultFormat.defaultChunkSize

  init(size: Int, seconds: Int, reads: Int, directory: String, command: String) {
    self.size = size
    self.seconds = seconds
    self.reads = reads
    self.directory = directory
    self.command = command
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

    // 1. Raw cipher speed.
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
    rows.append(
      BenchRow(
        measure: "openssl speed chacha20-poly1305, 64 KiB, 1 core",
        result: raw64.map(BenchFormat.rate) ?? "openssl: not installed"))
    rows.append(
      BenchRow(
        measure: "openssl speed chacha20-poly1305, 16 KiB, 1 core",
        result: raw16.map(BenchFormat.rate) ?? "openssl: not installed"))

    // 2. In-process seal and open.
    status.next("in-process seal/open (\(4 * seconds) s)")
    let key = try SymmetricKey.random()
    let duration = Double(seconds)
    let seal1 = try CipherBench.loop(sealing: true, key: key, chunkSize: chunkSize, seconds: duration)
    let open1 = try CipherBench.loop(sealing: false, key: key, chunkSize: chunkSize, seconds: duration)
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let sealN = try CipherBench.parallel(
      sealing: true, key: key, chunkSize: chunkSize, seconds: duration, threads: cores)
    let openN = try CipherBench.parallel(
      sealing: false, key: key, chunkSize: chunkSize, seconds: duration, threads: cores)
    let openLatencies = try CipherBench.openLatencies(key: key, chunkSize: chunkSize, samples: reads)
    for (name, rate) in [("seal", seal1), ("open", open1)] {
      let ratio = raw64.map { rate.perCPUSecond / $0 }
      rows.append(
        BenchRow(
          measure: "\(name), 1 core, ChaChaPoly.Context, 64 KiB chunks",
          result: BenchFormat.rate(rate.perCPUSecond)
            + (ratio.map { " (\(BenchFormat.ratio($0)) openssl)" } ?? ""),
          goal: "≥ 0.85 × openssl", met: ratio.map { $0 >= 0.85 }))
    }
    for (name, rate) in [("seal", sealN), ("open", openN)] {
      rows.append(
        BenchRow(
          measure: "\(name), all \(cores) cores, one context per thread",
          result: BenchFormat.rate(rate.perWallSecond)))
    }

    // The input and what plain reads and writes of it cost.
    status.next("writing the \(formatBytes(UInt64(size))) input")
    let input = try BenchInput()
    let inputPath = directory + "/input.bin"
    try input.write(to: inputPath, size: size)
    // A VM may back guest memory lazily: the first write to never-used pages is several
    // times slower. Touch enough once, untimed, so no timed step pays for it.
    _ = try BenchFiles.timeWrite(directory + "/warm-up.bin", size: 3 * size)
    let readSeconds = try BenchFiles.timeRead(inputPath)
    let (writeSeconds, syncSeconds) = try BenchFiles.timeWrite(directory + "/write-test.bin", size: size)
    let mb = Double(size)
    rows.append(
      BenchRow(measure: "read input from page cache, 4 MiB reads", result: BenchFormat.rate(mb / readSeconds)))
    rows.append(
      BenchRow(
        measure: "write a file of the same size, 4 MiB writes (no fsync)",
        result: BenchFormat.rate(mb / writeSeconds)))
    rows.append(
      BenchRow(
        measure: "then fsync it", result: BenchFormat.seconds(syncSeconds)))

    // 3 and 4. The vault in-process: import, export, random reads.
    status.next("vault import/export in-process")
    let vaultDirectory = directory + "/vault"
    let vault = try Vault.create(at: vaultDirectory, masterKey: try DemoKey.load())
    var started = BenchClock.now()
    let info = try vault.importFile(
      at: inputPath, name: "bench-inprocess", contentType: "application/octet-stream")
    let importInProcess = BenchClock.now() - started
    let id = try info.idValue
    let exportPath = directory + "/export.bin"
    started = BenchClock.now()
    try vault.export(id, to: exportPath)
    let exportInProcess = BenchClock.now() - started
    try requireIdentical(exportPath, inputPath, what: "in-process export")
    _ = unlink(exportPath)

    status.next("\(reads) random 4 KiB reads")
    let readLatencies = try randomReads(vault: vault, id: id, input: input)
    try vault.remove(id)

    // 3 and 5. The vault as a child process, like age.
    status.next("vault import/export as child processes")
    let executable = Subprocess.currentExecutable()
    let keyPath = directory + "/demo.key"
    try Data(DemoKey.text.utf8).write(to: URL(fileURLWithPath: keyPath))
    _ = chmod(keyPath, 0o600)
    let vaultArguments = ["--vault", vaultDirectory, "--key-file", keyPath]
    let importRun = try checked(
      [executable, "import", inputPath, "--id", "bench-cli"] + vaultArguments, rss: true)
    let exportRun = try checked(
      [executable, "export", "bench-cli", "-o", exportPath] + vaultArguments, rss: true)
    try requireIdentical(exportPath, inputPath, what: "`vault export`")
    _ = unlink(exportPath)
    // Free its pages before age runs, so age writes into the same recycled memory.
    try vault.remove(try vault.resolve("bench-cli"))

    // age, the peer.
    status.next("age -e / age -d")
    var ageEncrypt: ChildRun?
    var ageDecrypt: ChildRun?
    var ageEncryptSync = 0.0
    var ageDecryptSync = 0.0
    if let age, let ageKeygen {
      let identity = directory + "/age-key.txt"
      _ = try checked([ageKeygen, "-o", identity])
      let recipient = try String(contentsOfFile: identity, encoding: .utf8)
        .split(whereSeparator: \.isNewline)
        .first { $0.hasPrefix("# public key: ") }
        .map { String($0.dropFirst("# public key: ".count)) }
      guard let recipient else { throw CLIError("age-keygen wrote no public key to \(identity)") }
      let sealed = directory + "/input.bin.age"
      let opened = directory + "/age-out.bin"
      ageEncrypt = try checked([age, "-e", "-r", recipient, "-o", sealed, inputPath], rss: true)
      ageEncryptSync = try BenchFiles.timeSync(sealed)
      ageDecrypt = try checked([age, "-d", "-i", identity, "-o", opened, sealed], rss: true)
      ageDecryptSync = try BenchFiles.timeSync(opened)
      try requireIdentical(opened, inputPath, what: "age -d")
      _ = unlink(opened)
      _ = unlink(sealed)
    }

    status.next("report")
    let importRate = mb / importRun.seconds
    let exportRate = mb / exportRun.seconds
    let ageEncryptRate = ageEncrypt.map { mb / $0.seconds }
    let ageDecryptRate = ageDecrypt.map { mb / $0.seconds }
    let label = formatBytes(UInt64(size))
    rows.append(
      BenchRow(
        measure: "`vault import` \(label) (child process)", result: BenchFormat.rate(importRate),
        goal: "≥ 2 × age -e" + (ageEncryptRate.map { " (\(BenchFormat.rate(2 * $0)))" } ?? ""),
        met: ageEncryptRate.map { importRate >= 2 * $0 }))
    rows.append(
      BenchRow(
        measure: "`vault export` \(label) (child process)", result: BenchFormat.rate(exportRate),
        goal: "≥ 2 × age -d" + (ageDecryptRate.map { " (\(BenchFormat.rate(2 * $0)))" } ?? ""),
        met: ageDecryptRate.map { exportRate >= 2 * $0 }))
    rows.append(
      BenchRow(
        measure: "Vault.importFile in-process", result: BenchFormat.rate(mb / importInProcess)))
    rows.append(
      BenchRow(measure: "Vault.export in-process", result: BenchFormat.rate(mb / exportInProcess)))
    if let ageEncrypt, let ageDecrypt {
      rows.append(BenchRow(measure: "`age -e` \(label) (X25519 recipient)", result: BenchFormat.rate(mb / ageEncrypt.seconds)))
      rows.append(BenchRow(measure: "`age -d` \(label)", result: BenchFormat.rate(mb / ageDecrypt.seconds)))
      rows.append(
        BenchRow(
          measure: "`age -e` then fsync of its output (vault syncs; age does not)",
          result: BenchFormat.rate(mb / (ageEncrypt.seconds + ageEncryptSync))))
      rows.append(
        BenchRow(
          measure: "`age -d` then fsync of its output",
          result: BenchFormat.rate(mb / (ageDecrypt.seconds + ageDecryptSync))))
    } else {
      rows.append(BenchRow(measure: "`age -e` / `age -d`", result: "age: not installed"))
    }
    let readP50 = BenchFormat.quantile(readLatencies, 0.5)
    let readP99 = BenchFormat.quantile(readLatencies, 0.99)
    let openP50 = BenchFormat.quantile(openLatencies, 0.5)
    rows.append(
      BenchRow(
        measure: "random 4 KiB read via AssetReader, p50", result: BenchFormat.micros(readP50),
        goal: "≤ 2 × one chunk open (\(BenchFormat.micros(2 * openP50)))",
        met: readP50 <= 2 * openP50))
    rows.append(
      BenchRow(measure: "random 4 KiB read via AssetReader, p99", result: BenchFormat.micros(readP99)))
    rows.append(
      BenchRow(
        measure: "one 64 KiB chunk open (Context.open, in memory), p50",
        result: BenchFormat.micros(openP50)))
    let exportFits = exportRun.maxRSS <= 64 << 20
    rows.append(
      BenchRow(
        measure: "peak RSS of `vault export` \(label) (child process)", result: rss(exportRun),
        goal: "≤ 64 MiB", met: exportFits || exportRun.maxRSSIsExact ? exportFits : nil))
    rows.append(BenchRow(measure: "peak RSS of `vault import`", result: rss(importRun)))
    if let ageEncrypt, let ageDecrypt {
      rows.append(
        BenchRow(
          measure: "peak RSS of `age -e` / `age -d`",
          result: "\(rss(ageEncrypt)) / \(rss(ageDecrypt))"))
    }

    let model = BenchModel(
      size: mb, read: readSeconds, write: writeSeconds, sync: syncSeconds,
      sealAll: sealN.perWallSecond, openAll: openN.perWallSecond)
    interpretation = model.lines(
      importSeconds: importRun.seconds, exportSeconds: exportRun.seconds,
      ageEncrypt: ageEncrypt?.seconds, ageDecrypt: ageDecrypt?.seconds,
      seal1: seal1, open1: open1, raw64: raw64, readP50: readP50, openP50: openP50,
      exportRSS: exportRun.maxRSS)
    return BenchReport(
      command: command, machine: machine, date: date, rows: rows,
      commandsRun: commandsRun, notes: notes(cores: cores), interpretation: interpretation)
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
  private func checked(_ arguments: [String], rss: Bool = false) throws -> ChildRun {
    let run = try Subprocess.run(
      arguments, captureIn: directory, gnuTime: rss ? gnuTime : nil)
    commandsRun.append(shortLine(run.arguments))
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
    if let program = shown.first { shown[0] = URL(fileURLWithPath: program).lastPathComponent }
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

  private func notes(cores: Int) -> [String] {
    [
      "All files are in the page cache (warm) for the vault and age alike: the input is "
        + "written and fsynced before any timing, and dropping the page cache is not possible "
        + "here. Both read a warm input; outputs go to the same file system.",
      "`openssl speed` reports bytes per user-CPU second; the one-core in-process figures are "
        + "bytes per thread-CPU second, the same basis (on an idle machine both equal wall time). "
        + "All other figures are wall time.",
      "In-process loops seal/open one 64 KiB chunk repeatedly with a fresh RAND_bytes nonce "
        + "and a 51-byte AAD, as the vault does per chunk; \"all cores\" runs \(cores) such "
        + "loops at once, each with its own context.",
      "`vault import`/`vault export` and `age` are timed as child processes from spawn to exit "
        + "(wait4), so process start-up counts for both. They run under GNU time `-f %M`, whose "
        + "figure is the child's own peak RSS (wait4's ru_maxrss of a child spawned by this "
        + "process would also count this process's RSS, and is shown as an upper bound \"≤\" "
        + "when GNU time is missing).",
      "The vault fsyncs its asset file on import and the output file on export; age fsyncs "
        + "nothing, so the age rows with fsync add the time to fsync age's output afterwards.",
      "Before timing, a scratch file of 3 × --size is written and deleted: on a VM, the first "
        + "write to never-touched guest memory is several times slower, and whichever step ran "
        + "first would pay for it. The vault's assets are deleted before age runs, so both "
        + "write into recycled page-cache memory.",
      "Random reads: \(reads) reads of 4 KiB at random offsets, each inside one chunk and in a "
        + "different chunk than the read before, so every read reads one 64 KiB slot (pread) and "
        + "opens it; latency is wall time per `read(offset:count:)`; every result is checked.",
      "Every export and decryption is compared byte for byte with the input. Keys: the "
        + "published demo key (vault) and a fresh X25519 identity (age).",
    ]
  }
}

/// A serial model of import and export: each 4 MiB batch is read, then sealed or opened on
/// all cores, then written, and the file is fsynced at the end. Used to say where time goes.
struct BenchModel {
  let size: Double
  let read: Double
  let write: Double
  let sync: Double
  let sealAll: Double
  let openAll: Double

  func lines(
    importSeconds: Double, exportSeconds: Double, ageEncrypt: Double?, ageDecrypt: Double?,
    seal1: CipherRate, open1: CipherRate, raw64: Double?, readP50: Double, openP50: Double,
    exportRSS: Int
  ) -> [String] {
    var lines: [String] = []
    if let raw64 {
      lines.append(
        "Cipher: one core seals at \(BenchFormat.ratio(seal1.perCPUSecond / raw64)) and opens at "
          + "\(BenchFormat.ratio(open1.perCPUSecond / raw64)) of `openssl speed`; the per-chunk "
          + "nonce, AAD and EVP calls cost little at 64 KiB, so the cipher itself is the limit.")
    }
    let seal = size / sealAll
    let open = size / openAll
    let sealModel = read + seal + write + sync
    let openModel = read + open + write + sync
    lines.append(
      "Import took \(BenchFormat.seconds(importSeconds)); done one after another, reading "
        + "(\(BenchFormat.seconds(read))), sealing on all cores (\(BenchFormat.seconds(seal))), "
        + "writing (\(BenchFormat.seconds(write))) and the final fsync "
        + "(\(BenchFormat.seconds(sync))) add up to \(BenchFormat.seconds(sealModel)). "
        + "Export: \(BenchFormat.seconds(exportSeconds)) against \(BenchFormat.seconds(openModel)) "
        + "(opening takes \(BenchFormat.seconds(open))).")
    let syncShare = sync / max(importSeconds, 1e-9)
    if let ageEncrypt, let ageDecrypt {
      lines.append(
        "age does not fsync; the vault does on both import and export, and the fsync of "
          + "\(formatBytes(UInt64(size))) alone is \(Int(syncShare * 100))% of the import time. "
          + "Without it the model gives \(BenchFormat.seconds(sealModel - sync)) / "
          + "\(BenchFormat.seconds(openModel - sync)), against age's "
          + "\(BenchFormat.seconds(ageEncrypt)) / \(BenchFormat.seconds(ageDecrypt)).")
    }
    lines.append(
      "A random 4 KiB read (p50 \(BenchFormat.micros(readP50))) is one pread of a 64 KiB slot "
        + "from the page cache plus one open (\(BenchFormat.micros(openP50)) with the chunk "
        + "already in CPU cache): \(BenchFormat.ratio(readP50 / max(openP50, 1e-9))) of an open.")
    lines.append(
      "Export memory (\(BenchFormat.mebibytes(exportRSS))) is the runtime plus two 4 MiB batch "
        + "buffers; it does not grow with the asset.")
    return lines
  }
}
