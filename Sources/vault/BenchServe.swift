import Dispatch
import Foundation
import VaultCore
import VaultLoader
import VaultServer

/// One curl transfer, from its `-w` figures.
struct CurlRun {
  let status: Int
  let bytes: Int
  /// curl's `speed_download`, bytes per second.
  let speed: Double
  /// Seconds from start to the end of the transfer, and to its first byte.
  let total: Double
  let firstByte: Double
  /// CPU seconds curl used.
  let cpuSeconds: Double
}

/// Runs curl to /dev/null and reads what it reports.
struct BenchCurl {
  static let format =
    "%{http_code} %{size_download} %{speed_download} %{time_total} "
    + "%{time_starttransfer}"
  let executable: String
  let directory: String

  /// The command line, for the report. `-m`: a hung transfer fails instead of waiting forever.
  func arguments(_ url: String, range: String? = nil) -> [String] {
    [executable, "-s", "-m", "\(Int(BenchAsync.limit))", "-o", "/dev/null"]
      + (range.map { ["-r", $0] } ?? []) + [
        "-w", Self.format, url,
      ]
  }

  /// One download; fails unless the status is `status` and `bytes` arrived.
  /// - Parameter scratch: where the child's output is captured (one per concurrent curl).
  func get(_ url: String, range: String? = nil, status: Int, bytes: Int, scratch: String? = nil)
    throws -> CurlRun
  {
    let run = try Subprocess.run(arguments(url, range: range), captureIn: scratch ?? directory)
    try run.check()
    let fields = run.output.split(separator: " ").map(String.init)
    guard fields.count == 5, let code = Int(fields[0]), let size = Int(fields[1]),
      let speed = Double(fields[2]), let total = Double(fields[3]),
      let firstByte = Double(fields[4])
    else { throw CLIError("curl printed \"\(run.output)\", not its -w figures") }
    guard code == status, size == bytes else {
      throw CLIError("curl \(url): status \(code) with \(size) bytes, not \(status) with \(bytes)")
    }
    return CurlRun(
      status: code, bytes: size, speed: speed, total: total, firstByte: firstByte,
      cpuSeconds: run.cpuSeconds)
  }

  /// Two downloads at once, of the two halves of a `size`-byte resource (`-r`); returns the
  /// combined rate's seconds: the later of the two to finish (they start within a
  /// millisecond of each other).
  func halves(_ url: String, size: Int) throws -> Double {
    let half = size / 2
    let parts = [("0-\(half - 1)", half), ("\(half)-\(size - 1)", size - half)]
    let results = Locked<[Result<CurlRun, any Error>]>([])
    let directory = self.directory
    DispatchQueue.concurrentPerform(iterations: 2) { k in
      let scratch = "\(directory)/curl-\(k)"
      try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
      let result = Result {
        try get(url, range: parts[k].0, status: 206, bytes: parts[k].1, scratch: scratch)
      }
      results.withLock { $0.append(result) }
    }
    return try results.withLock { $0 }.map { try $0.get().total }.max() ?? 0
  }
}

/// Everything section 8 measured. Times in seconds; one entry per round.
struct ServeFigures {
  let size: Int
  let runs: Int
  let vaultOne: [Double]
  let nginxOne: [Double]
  let vaultTwo: [Double]
  let nginxTwo: [Double]
  /// Process CPU seconds of `vault serve` (this process) and of nginx per 1-connection download.
  let vaultCPU: [Double]
  let nginxCPU: [Double]
  /// curl's CPU seconds for those downloads (vault's).
  let curlCPU: [Double]
  /// nginx slice cache in front of the file nginx, cold and warm; nil without the module.
  let sliceCold: [Double]?
  let sliceWarm: [Double]?
  /// Time to first byte of the 64 KiB range, sorted.
  let vaultFirstByte: [Double]
  let nginxFirstByte: [Double]
  let rangeStart: Int
  /// `stream?url=` of the nginx URL through a new vault, and curl from nginx directly.
  let streamCold: [Double]
  let streamDirect: [Double]
  /// Seconds after the cold client finished until every chunk was recorded (median round).
  let streamFlush: Double
  /// The nginx configs (paths under $WORK) and the command lines run.
  let configs: [String]
  let commands: [String]
}

/// Section 8: `vault serve` (in this process) against nginx on loopback, with curl as the
/// client of both: a stored asset at 1 and 2 connections, nginx's slice cache as the peer,
/// time to first byte of a 64 KiB range, and cold proxying of an nginx-served file.
struct ServeBench {
  static let runs = 3
  static let firstByteSamples = 20
  let size: Int
  let directory: String
  let inputPath: String
  let key: MasterKey
  let curl: BenchCurl
  let nginx: String
  /// Whether nginx has the slice module (`nginx -V` lists --with-http_slice_module).
  let slice: Bool

  func run(step: (String) -> Void, prime: () throws -> Void) throws -> ServeFigures {
    let input = "/" + URL(fileURLWithPath: inputPath).lastPathComponent
    let root = URL(fileURLWithPath: inputPath).deletingLastPathComponent().path
    let origin = try BenchNginx(
      executable: nginx, prefix: directory + "/nginx-origin",
      http: BenchNginx.fileServer(root: root))
    defer { origin.stop() }
    var commands = [origin.arguments]
    let plainURL = origin.url(input)

    // 1 and 3. A stored asset through `vault serve` against the same file from nginx.
    step("serve: importing \(formatBytes(UInt64(size))) into a scratch vault")
    let vaultDirectory = directory + "/serve-vault"
    try? FileManager.default.removeItem(atPath: vaultDirectory)
    defer { try? FileManager.default.removeItem(atPath: vaultDirectory) }
    let vault = try Vault.create(at: vaultDirectory, masterKey: key)
    _ = try vault.importFile(
      at: inputPath, name: "bench-serve", contentType: "application/octet-stream")
    let server = try Self.startServer(vault)
    defer { Self.stop(server) }
    let assetURL = server.url(forAsset: "bench-serve").absoluteString
    var (vaultOne, nginxOne, vaultTwo, nginxTwo) = ([Double](), [Double](), [Double](), [Double]())
    var (vaultCPU, nginxCPU, curlCPU) = ([Double](), [Double](), [Double]())
    // A warm-up of each, untimed: the first reads open the asset and fill the caches.
    _ = try curl.get(assetURL, range: "0-1048575", status: 206, bytes: 1 << 20)
    _ = try curl.get(plainURL, range: "0-1048575", status: 206, bytes: 1 << 20)
    for round in 1...Self.runs {
      step("serve, round \(round) of \(Self.runs): stored asset vs nginx, 1 and 2 connections")
      var cpu = BenchProcess.cpuSeconds()
      let download = try curl.get(assetURL, status: 200, bytes: size)
      vaultOne.append(Double(size) / download.speed)
      vaultCPU.append(BenchProcess.cpuSeconds() - cpu)
      curlCPU.append(download.cpuSeconds)
      cpu = origin.cpuSeconds()
      nginxOne.append(Double(size) / (try curl.get(plainURL, status: 200, bytes: size).speed))
      nginxCPU.append(origin.cpuSeconds() - cpu)
      vaultTwo.append(try curl.halves(assetURL, size: size))
      nginxTwo.append(try curl.halves(plainURL, size: size))
    }
    step("serve: time to first byte of a stored 64 KiB range (\(Self.firstByteSamples) each)")
    // In the middle, not chunk-aligned: it spans two chunks, as most of a player's ranges do.
    let start = size / 2 + 1000
    let range = "\(start)-\(start + 65_535)"
    var (vaultFirst, nginxFirst) = ([Double](), [Double]())
    for _ in 0..<Self.firstByteSamples {
      vaultFirst.append(try curl.get(assetURL, range: range, status: 206, bytes: 65_536).firstByte)
      nginxFirst.append(try curl.get(plainURL, range: range, status: 206, bytes: 65_536).firstByte)
    }
    Self.stop(server)
    try vault.remove(try vault.resolve("bench-serve"))

    // 2. nginx's slice cache in front of the file nginx: a new cache (new process, empty
    // directory) each round, read cold then warm.
    var sliceCold: [Double]?
    var sliceWarm: [Double]?
    var configs = [origin.config]
    if slice {
      var (cold, warm) = ([Double](), [Double]())
      for round in 1...Self.runs {
        step("serve, round \(round) of \(Self.runs): nginx proxy_cache + slice, cold and warm")
        let prefix = directory + "/nginx-cache"
        try? FileManager.default.removeItem(atPath: prefix)
        try prime()
        let cache = try BenchNginx(
          executable: nginx, prefix: prefix,
          http: BenchNginx.sliceCache(prefix: prefix, origin: origin.port))
        defer {
          cache.stop()
          try? FileManager.default.removeItem(atPath: prefix)
        }
        if round == 1 {
          configs.append(cache.config)
          commands.append(cache.arguments)
        }
        let url = cache.url(input)
        cold.append(Double(size) / (try curl.get(url, status: 200, bytes: size).speed))
        warm.append(Double(size) / (try curl.get(url, status: 200, bytes: size).speed))
      }
      (sliceCold, sliceWarm) = (cold, warm)
    }

    // 4. Cold proxying: `stream?url=` of the nginx URL through a new vault each round.
    var (streamCold, streamDirect, flushes) = ([Double](), [Double](), [Double]())
    let coldDirectory = directory + "/serve-cold-vault"
    defer { try? FileManager.default.removeItem(atPath: coldDirectory) }
    for round in 1...Self.runs {
      step("serve, round \(round) of \(Self.runs): stream?url= cold vs nginx direct")
      streamDirect.append(
        Double(size) / (try curl.get(plainURL, status: 200, bytes: size).speed))
      try? FileManager.default.removeItem(atPath: coldDirectory)
      try prime()
      let fresh = try Vault.create(at: coldDirectory, masterKey: key)
      let proxy = try Self.startServer(fresh)
      defer { Self.stop(proxy) }
      guard let originURL = URL(string: plainURL) else { throw CLIError("bad URL \(plainURL)") }
      let streamURL = proxy.url(forOrigin: originURL).absoluteString
      let run = try curl.get(streamURL, status: 200, bytes: size)
      streamCold.append(Double(size) / run.speed)
      // Untimed for the rate: the store finishing behind the client.
      let flushStart = BenchClock.now()
      let fetched = try BenchAsync.wait("flushing the cold stream") {
        try await proxy.loader.flush()
        return await proxy.loader.statistics.bytesFromOrigin
      }
      flushes.append(BenchClock.now() - flushStart)
      guard fetched >= UInt64(size) else {
        throw CLIError("the cold stream fetched \(fetched) bytes from nginx, not \(size)")
      }
    }
    let token = server.baseURL.pathComponents.dropFirst().first ?? ""
    let curlLines = [
      curl.arguments(assetURL), curl.arguments(assetURL, range: "0-\(size / 2 - 1)"),
      curl.arguments(plainURL), curl.arguments(assetURL, range: range),
      curl.arguments("http://127.0.0.1:PORT/TOKEN/stream?url=ENCODED-NGINX-URL"),
    ].map { shortLine($0).replacingOccurrences(of: token, with: "TOKEN") }
    return ServeFigures(
      size: size, runs: Self.runs, vaultOne: vaultOne, nginxOne: nginxOne, vaultTwo: vaultTwo,
      nginxTwo: nginxTwo, vaultCPU: vaultCPU, nginxCPU: nginxCPU, curlCPU: curlCPU,
      sliceCold: sliceCold,
      sliceWarm: sliceWarm, vaultFirstByte: vaultFirst.sorted(),
      nginxFirstByte: nginxFirst.sorted(), rangeStart: start, streamCold: streamCold,
      streamDirect: streamDirect, streamFlush: BenchFormat.quantile(flushes.sorted(), 0.5),
      configs: configs.map {
        $0.replacingOccurrences(of: directory, with: "$WORK")
          .trimmingCharacters(in: .whitespacesAndNewlines)
      },
      commands: commands.map(shortLine) + curlLines)
  }

  /// A command line with programs by their name and the scratch directory as `$WORK`.
  private func shortLine(_ arguments: [String]) -> String {
    let named = arguments.enumerated().map { k, argument in
      k == 0 || argument == nginx ? URL(fileURLWithPath: argument).lastPathComponent : argument
    }
    return BenchFormat.shellLine(named).replacingOccurrences(of: directory, with: "$WORK")
  }

  /// `VaultServer.start(vault:)` on a free loopback port, no request log.
  private static func startServer(_ vault: Vault) throws -> VaultServer {
    try BenchAsync.wait("starting vault serve") { try await VaultServer.start(vault: vault) }
  }

  /// Stops a server (idempotent).
  private static func stop(_ server: VaultServer) {
    _ = try? BenchAsync.wait("stopping vault serve") { await server.shutdown() }
  }
}

extension ServeFigures {
  func median(_ values: [Double]) -> Double { BenchFormat.quantile(values.sorted(), 0.5) }

  /// The rate with its range over rounds and, if given, its ratio to `peer`'s median.
  private func rates(_ seconds: [Double], against peer: [Double]? = nil) -> String {
    BenchFormat.rates(bytes: size, seconds: seconds)
      + (peer.map { " (\(BenchFormat.ratio(median($0) / median(seconds))) nginx)" } ?? "")
  }

  private func millis(_ seconds: Double) -> String { String(format: "%.2f ms", seconds * 1000) }

  /// Median and range of sorted latencies, e.g. `1.52 ms (1.20–2.31)`.
  private func latencies(_ sorted: [Double]) -> String {
    millis(BenchFormat.quantile(sorted, 0.5))
      + String(format: " (%.2f–%.2f)", (sorted.first ?? 0) * 1000, (sorted.last ?? 0) * 1000)
  }

  func rows() -> [BenchRow] {
    let label = formatBytes(UInt64(size))
    let of = runs > 1 ? ", median of \(runs)" : ""
    let one = median(nginxOne) / median(vaultOne)
    let two = median(nginxTwo) / median(vaultTwo)
    let cold = median(streamDirect) / median(streamCold)
    var rows = [
      BenchRow(
        measure: "8. `vault serve` `assets/`, a stored \(label) asset, curl over loopback, "
          + "1 connection\(of)",
        result: rates(vaultOne, against: nginxOne),
        goal: "≥ 0.8 × nginx (\(BenchFormat.rate(0.8 * Double(size) / median(nginxOne))))",
        met: one >= 0.8),
      BenchRow(
        measure: "8. nginx, the plain file (`sendfile on`), same curl, 1 connection\(of)",
        result: rates(nginxOne)),
      BenchRow(
        measure: "8. `vault serve`, 2 connections (two curls on the two halves with `-r`, "
          + "combined\(of))",
        result: rates(vaultTwo, against: nginxTwo),
        goal: "≥ 0.8 × nginx (\(BenchFormat.rate(0.8 * Double(size) / median(nginxTwo))))",
        met: two >= 0.8),
      BenchRow(
        measure: "8. nginx, 2 connections (the same two curls)\(of)", result: rates(nginxTwo)),
    ]
    if let sliceCold, let sliceWarm {
      rows.append(
        BenchRow(
          measure: "8. nginx `proxy_cache` + `slice 1m` in front of that nginx, cold (new cache "
            + "each round\(of))",
          result: rates(sliceCold)
            + " (\(BenchFormat.ratio(median(nginxOne) / median(sliceCold))) direct)"))
      rows.append(
        BenchRow(
          measure: "8. the same slice cache, warm (every slice stored\(of))",
          result: rates(sliceWarm, against: nginxOne)))
    } else {
      rows.append(
        BenchRow(
          measure: "8. nginx `proxy_cache` + `slice 1m`, cold and warm",
          result: "nginx: no slice module (`nginx -V`)"))
    }
    rows.append(
      BenchRow(
        measure: "8. time to first byte, a stored 64 KiB range (bytes \(rangeStart)–"
          + "\(rangeStart + 65_535)), `vault serve`, median of \(vaultFirstByte.count)",
        result: latencies(vaultFirstByte)))
    rows.append(
      BenchRow(
        measure: "8. the same range from nginx, median of \(nginxFirstByte.count)",
        result: latencies(nginxFirstByte)))
    rows.append(
      BenchRow(
        measure: "8. `vault serve` `stream?url=`, cold: \(label) from the nginx origin through a "
          + "new vault each round\(of)",
        result: BenchFormat.rates(bytes: size, seconds: streamCold)
          + " (\(BenchFormat.ratio(cold)) direct)",
        goal: "≥ 0.7 × direct (\(BenchFormat.rate(0.7 * Double(size) / median(streamDirect))))",
        met: cold >= 0.7))
    rows.append(
      BenchRow(
        measure: "8. curl from that nginx directly, the same rounds\(of)",
        result: BenchFormat.rates(bytes: size, seconds: streamDirect)))
    return rows
  }

  /// What limits each number. `openRate` is section 2's one-core open rate (bytes per CPU
  /// second).
  func lines(openRate: Double) -> [String] {
    let gib = Double(size) / Double(1 << 30)
    let s = BenchFormat.seconds
    let vaultCPU = median(self.vaultCPU) / gib
    let nginxCPU = median(self.nginxCPU) / gib
    let open = Double(1 << 30) / max(openRate, 1)
    let one = median(vaultOne)
    var lines = [
      "Stored asset: `vault serve` used \(s(vaultCPU)) of CPU per GiB (this process: pread of "
        + "the sealed chunks, ChaCha20-Poly1305 open, socket writes), of which opening is about "
        + "\(s(open)) at section 2's one-core rate; nginx used \(s(nginxCPU)) per GiB "
        + "(`sendfile`: the page cache goes to the socket without a copy to user space), and curl "
        + "\(s(median(curlCPU) / gib)) per GiB to receive. During the \(s(one)) download the "
        + "server kept "
        + String(format: "%.2f", median(self.vaultCPU) / max(one, 1e-9))
        + " cores busy: its CPU per GiB, \(BenchFormat.ratio(vaultCPU / max(nginxCPU, 1e-9))) "
        + "nginx's, is decryption plus copies through user space where nginx has none, and is "
        + "what separates the two on 2 shared cores.",
      "Two connections: \(BenchFormat.rate(Double(size) / median(vaultTwo))) for the vault "
        + "(\(BenchFormat.ratio(one / median(vaultTwo))) its one-connection rate), "
        + "\(BenchFormat.rate(Double(size) / median(nginxTwo))) for nginx "
        + "(\(BenchFormat.ratio(median(nginxOne) / median(nginxTwo)))): two curls and the "
        + "server share the 2 cores; the vault opens the two halves' chunks on its thread pool "
        + "at once, nginx (one process) sends both with sendfile.",
    ]
    if let sliceCold, let sliceWarm {
      lines.append(
        "nginx's slice cache: cold, each 1 MiB slice is a Range request to the file nginx, "
          + "written to a temporary file in the cache and renamed into place before it is sent "
          + "on, one slice at a time: \(BenchFormat.ratio(median(nginxOne) / median(sliceCold))) "
          + "direct. Warm, it sends the stored slices with sendfile, one file per MiB: "
          + "\(BenchFormat.ratio(median(nginxOne) / median(sliceWarm))) the plain file. It stores "
          + "in the clear; the vault seals and authenticates every chunk.")
    }
    let first = BenchFormat.quantile(vaultFirstByte, 0.5)
    let nginxFirst = BenchFormat.quantile(nginxFirstByte, 0.5)
    lines.append(
      "Time to first byte (\(millis(first)) against \(millis(nginxFirst)) for nginx) includes "
        + "curl's connect and request; the vault then parses the token and range, takes an idle "
        + "reader of the asset, and opens the two chunks the range spans (about "
        + "\(BenchFormat.micros(2 * 65_536 / max(openRate, 1))) at section 2's rate) on the "
        + "thread pool before the first write.")
    lines.append(
      "Cold proxying: \(BenchFormat.ratio(median(streamDirect) / median(streamCold))) direct, "
        + "timed by curl until the last byte arrives; the store finished "
        + "\(s(streamFlush)) later (median). The limit is the range loader's cold path "
        + "(the origin client's copies, sealing, writing the page cache: about 1 CPU second per "
        + "GiB between them on this machine, against curl and nginx for the same cores; "
        + "section 6 measures the "
        + "loader alone at a similar rate), not the server, whose readers get each chunk from "
        + "memory as it arrives"
        + (sliceCold.map {
          ". nginx's slice cache manages \(BenchFormat.ratio(median(nginxOne) / median($0))) "
            + "direct cold here"
        } ?? "") + ".")
    return lines
  }

  /// How the figures were taken, with the nginx configs exactly as written.
  func notes() -> [String] {
    [
      "`vault serve` (section 8) runs in this process (`VaultServer.start(vault:)`, as the "
        + "`vault serve` command does, no request log) on 127.0.0.1 and a free port; nginx "
        + "(the Debian package) runs as one process per config (`master_process off`, so the "
        + "benchmark's child is nginx itself, under `setpriv --pdeathsig TERM` when available) "
        + "and is stopped with SIGTERM at the end of its part, on an error or on Ctrl-C. curl "
        + "(`-s -o /dev/null -w '\(BenchCurl.format)'`) is the client of both, one child per "
        + "download; rates are curl's speed_download (2 connections: the size over the later "
        + "curl's time_total). Each round downloads the vault, then nginx; status and byte "
        + "count of every transfer are checked.",
      "Stored asset: the input imported into a scratch vault (`assets/bench-serve`); one "
        + "untimed 1 MiB range from each first. Time to first byte: curl's time_starttransfer, "
        + "\(vaultFirstByte.count) requests to each, alternating, each a new connection. Cold "
        + "proxying: per round a curl from nginx, then a new vault and a new server, "
        + "`stream?url=` of the nginx URL (`url(forOrigin:)`), then `RangeLoader.flush()` "
        + "(untimed) and a check that the loader fetched the whole file from nginx.",
      "nginx serving the file: `\(configs.first ?? "")`",
    ]
      + configs.dropFirst().map {
        "nginx slice cache (a new process and empty cache each round): `\($0)`"
      }
  }
}
