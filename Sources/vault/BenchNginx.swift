import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// An nginx the benchmark starts on loopback with a generated config in the scratch
/// directory, as one process (`master_process off; daemon off`): the child is nginx itself,
/// so stopping it is one signal to one pid, and under `setpriv --pdeathsig TERM` it also
/// ends if the benchmark is killed outright.
final class BenchNginx {
  /// The process and its prefix directory (config, logs, temp paths, cache).
  let pid: pid_t
  let port: Int
  let prefix: String
  /// The config as written (paths as in the scratch directory).
  let config: String
  /// The command line that started it.
  let arguments: [String]
  private var running = true

  /// The base config: one process, `sendfile on`, no access log, every temp path inside
  /// `prefix` (the compiled-in ones are under /var/lib/nginx, not writable without root).
  static func config(prefix: String, port: Int, http body: String) -> String {
    let temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
      .map { "\($0)_temp_path \(prefix)/temp-\($0);" }.joined(separator: " ")
    return "worker_processes 1; master_process off; daemon off; pid \(prefix)/nginx.pid; "
      + "error_log \(prefix)/error.log warn; events { worker_connections 256; } "
      + "http { access_log off; sendfile on; default_type application/octet-stream; \(temp) "
      + body.replacingOccurrences(of: "PORT", with: "\(port)") + " }\n"
  }

  /// A server of the files in `root`.
  static func fileServer(root: String) -> String {
    "server { listen 127.0.0.1:PORT; root \(root); location / { } }"
  }

  /// nginx's range cache in front of `origin` (a port on 127.0.0.1): each 1 MiB slice is
  /// fetched once with a Range request, stored under `prefix/cache`, and served from there.
  static func sliceCache(prefix: String, origin: Int) -> String {
    "upstream origin { server 127.0.0.1:\(origin); keepalive 8; } "
      + "proxy_cache_path \(prefix)/cache levels=1:2 keys_zone=slices:16m inactive=1h "
      + "use_temp_path=off; "
      + "server { listen 127.0.0.1:PORT; location / { slice 1m; proxy_cache slices; "
      + "proxy_cache_key $uri$is_args$args$slice_range; proxy_set_header Range $slice_range; "
      + "proxy_http_version 1.1; proxy_set_header Connection \"\"; "
      + "proxy_cache_valid 200 206 1h; proxy_pass http://origin; } }"
  }

  /// Writes the config into a new `prefix` directory, starts nginx on a free loopback port
  /// and waits (at most 5 s) until it accepts connections.
  /// - Parameter http: the `http { }` block's servers; `PORT` is replaced by the port.
  init(executable: String, prefix: String, http: String) throws {
    try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
    port = try LoopbackPort.free()
    self.prefix = prefix
    config = Self.config(prefix: prefix, port: port, http: http)
    let path = prefix + "/nginx.conf"
    try Data(config.utf8).write(to: URL(fileURLWithPath: path))
    var command = [executable, "-e", prefix + "/error.log", "-p", prefix + "/", "-c", path]
    if let setpriv = Subprocess.find("setpriv") {
      command = [setpriv, "--pdeathsig", "TERM"] + command
    }
    arguments = command
    pid = try BenchChildren.spawn(command, output: prefix + "/stderr.log")
    let deadline = BenchClock.now() + 5
    while !LoopbackPort.accepts(port) {
      if BenchChildren.exited(pid) {
        running = false
        throw CLIError("nginx exited at start: " + errorTail())
      }
      guard BenchClock.now() < deadline else {
        stop()
        throw CLIError("nginx did not listen on 127.0.0.1:\(port) within 5 s: " + errorTail())
      }
      usleep(10_000)
    }
  }

  deinit { stop() }

  /// `http://127.0.0.1:PORT` + `path`.
  func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

  /// CPU seconds (user + system) nginx has used so far, from /proc/PID/stat; 0 elsewhere.
  func cpuSeconds() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = text.lastIndex(of: ")")
    else { return 0 }
    // After "pid (comm)": state is field 3, utime 14 and stime 15 (clock ticks).
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12])
    else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  /// SIGTERM (nginx's fast shutdown), reaped within 5 s, else SIGKILL. Idempotent.
  func stop() {
    guard running else { return }
    running = false
    BenchChildren.stop(pid)
  }

  private func errorTail() -> String {
    let text = [prefix + "/error.log", prefix + "/stderr.log"]
      .compactMap { FileManager.default.contents(atPath: $0) }
      .map { String(decoding: $0, as: UTF8.self) }.joined(separator: "\n")
    return text.split(whereSeparator: \.isNewline).last.map(String.init) ?? "no error log"
  }
}

/// Long-running children (nginx) of the benchmark: spawned without waiting, and killed by
/// the interrupt handler if the run is stopped with Ctrl-C or SIGTERM.
enum BenchChildren {
  private static let lock = NSLock()
  nonisolated(unsafe) private static var live: Set<pid_t> = []
  nonisolated(unsafe) private static var registered = false

  /// Starts `arguments` (the first searched in PATH) with stdin from /dev/null and stdout
  /// and stderr into `output`; SIGINT and SIGTERM at their defaults.
  static func spawn(_ arguments: [String], output: String) throws -> pid_t {
    guard let program = arguments.first else { throw CLIError("empty command line") }
    lock.withLock {
      if !registered {
        registered = true
        InterruptCleanup.add { BenchChildren.stopAll() }
      }
    }
    let pid = try ChildSpawn.start(program, arguments, output: .file(output))
    lock.withLock { _ = live.insert(pid) }
    return pid
  }

  /// Whether `pid` has exited (it is reaped then, here or by another thread: ECHILD).
  static func exited(_ pid: pid_t) -> Bool {
    var status: Int32 = 0
    let reaped = waitpid(pid, &status, WNOHANG)
    guard reaped == pid || (reaped < 0 && errno == ECHILD) else { return false }
    lock.withLock { _ = live.remove(pid) }
    return true
  }

  /// SIGTERM, then up to 5 s for it to exit, then SIGKILL; reaps it.
  static func stop(_ pid: pid_t) {
    guard lock.withLock({ live.contains(pid) }) else { return }
    kill(pid, SIGTERM)
    let deadline = BenchClock.now() + 5
    while !exited(pid) {
      if BenchClock.now() > deadline {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        lock.withLock { _ = live.remove(pid) }
        return
      }
      usleep(5_000)
    }
  }

  /// Stops every child still running: before the scratch directory they write into is
  /// removed (at the end or on Ctrl-C), so none recreates a file in it meanwhile.
  static func stopAll() {
    for pid in lock.withLock({ live }) { stop(pid) }
  }
}

/// Loopback ports: a free one, and whether one accepts connections.
enum LoopbackPort {
  #if canImport(Glibc)
    private static let streamType = Int32(SOCK_STREAM.rawValue)
  #else
    private static let streamType = SOCK_STREAM
  #endif

  /// A port the kernel hands out for 127.0.0.1 (bound, read, closed: another process could
  /// take it before nginx does, which then fails to start with a clear error).
  static func free() throws -> Int {
    let fd = socket(AF_INET, streamType, 0)
    guard fd >= 0 else { throw CLIError("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = loopback(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    guard bound else { throw CLIError("bind 127.0.0.1:0: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// Whether a TCP connection to 127.0.0.1:`port` succeeds.
  static func accepts(_ port: Int) -> Bool {
    let fd = socket(AF_INET, streamType, 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = loopback(port: port)
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  private static func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
  }
}
