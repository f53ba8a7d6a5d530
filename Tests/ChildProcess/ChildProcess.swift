import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A child process started with `posix_spawn`, for the test processes.
///
/// Not Foundation's `Process`: on Linux (Swift 6.3.1) its `run()` copies each
/// `/proc/self/fd` entry's whole 256-byte name field, reading past glibc's directory buffer
/// once a process has about 1,350 descriptors open, and so crashes now and then (a
/// SIGSEGV in `Process.run`, swift-corelibs-foundation PR #5472). A test process running
/// many servers, origins and vaults at once gets there. Here the pipes are close-on-exec,
/// so no other child inherits them (see `route`), and nothing walks the descriptor table.
public final class ChildProcess: @unchecked Sendable {
  /// The child's process id.
  public let pid: pid_t
  /// The read end of the child's stdout, if it was captured.
  public let standardOutput: FileHandle?
  /// The read end of the child's stderr, if it was captured.
  public let standardError: FileHandle?
  private let lock = NSLock()
  private var exitStatus: Int32?

  /// Where a child's stdout or stderr goes.
  public enum Output {
    /// A pipe this process reads (``standardOutput``, ``standardError``).
    case capture
    /// A file, created or truncated.
    case file(String)
    /// Nowhere.
    case discard
  }

  /// Starts `executable` (a path, or a name looked up in /usr/bin, /usr/local/bin, /bin).
  /// stdin is /dev/null.
  /// - Parameter environment: the child's whole environment; nil passes this process's.
  public init(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    stdout: Output = .capture, stderr: Output = .capture
  ) throws {
    let path = executable.hasPrefix("/") ? executable : (Self.which(executable) ?? executable)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    var parentEnds: [Int32] = []
    var childEnds: [Int32] = []
    defer { for fd in childEnds { close(fd) } }
    func route(_ output: Output, to target: Int32) throws -> FileHandle? {
      switch output {
      case .capture:
        var fds: [Int32] = [0, 0]
        // pipe2(O_CLOEXEC) is not visible from Swift here; the window until fcntl is a few
        // instructions (a child spawned by another thread then could hold a write end).
        guard pipe(&fds) == 0 else { throw Self.failure("pipe") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        parentEnds.append(fds[0])
        childEnds.append(fds[1])
        posix_spawn_file_actions_adddup2(&actions, fds[1], target)
        return FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
      case .file(let file):
        posix_spawn_file_actions_addopen(
          &actions, target, file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        return nil
      case .discard:
        posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
        return nil
      }
    }
    let outHandle: FileHandle?
    let errHandle: FileHandle?
    do {
      outHandle = try route(stdout, to: 1)
      errHandle = try route(stderr, to: 2)
    } catch {
      for fd in parentEnds { close(fd) }
      throw error
    }
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let pairs = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    let envp = pairs.map { strdup($0) } + [nil]
    defer { for pointer in envp { free(pointer) } }
    var child: pid_t = 0
    let result = posix_spawn(&child, path, &actions, nil, argv, envp)
    guard result == 0 else {
      outHandle?.closeFile()
      errHandle?.closeFile()
      throw Self.failure("posix_spawn \(path)", code: result)
    }
    pid = child
    standardOutput = outHandle
    standardError = errHandle
  }

  /// The full path of `tool` in the usual directories, if installed.
  public static func which(_ tool: String) -> String? {
    for dir in ["/usr/bin", "/usr/local/bin", "/bin"]
    where FileManager.default.isExecutableFile(atPath: dir + "/" + tool) {
      return dir + "/" + tool
    }
    return nil
  }

  /// Whether the child has not exited yet (reaps it if it has).
  public var isRunning: Bool {
    lock.withLock {
      if exitStatus != nil { return false }
      var status: Int32 = 0
      let reaped = waitpid(pid, &status, WNOHANG)
      if reaped == pid {
        exitStatus = Self.decode(status)
        return false
      }
      return reaped == 0
    }
  }

  /// Waits for the child to exit. Returns its exit status, or 128 + the signal that ended it.
  @discardableResult
  public func wait() -> Int32 {
    while isRunning { usleep(2_000) }
    return lock.withLock { exitStatus ?? -1 }
  }

  /// Waits at most `seconds`; false if the child is still running then.
  public func wait(seconds: Double) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while isRunning {
      if Date() >= deadline { return false }
      usleep(2_000)
    }
    return true
  }

  /// The exit status once the child has exited (see ``wait()``).
  public var terminationStatus: Int32 {
    _ = isRunning
    return lock.withLock { exitStatus ?? -1 }
  }

  /// Sends `signal` (SIGTERM by default) unless the child has exited.
  public func signal(_ signal: Int32 = SIGTERM) {
    if isRunning { kill(pid, signal) }
  }

  private static func decode(_ status: Int32) -> Int32 {
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
  }

  private static func failure(_ what: String, code: Int32 = errno) -> NSError {
    NSError(
      domain: "ChildProcess", code: Int(code),
      userInfo: [NSLocalizedDescriptionKey: "\(what): \(String(cString: strerror(code)))"])
  }
}
