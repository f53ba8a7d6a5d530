#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Named points in key rotation and re-encryption where the crash-safety tests can kill the
/// process. Test-only: when the environment variable `VAULT_TEST_CRASH_AT` equals the
/// point's name, the process sends itself SIGKILL there (no cleanup, like a power cut).
/// Without the variable this is a no-op.
public enum CrashPoint {
  /// Kills the process with SIGKILL if `VAULT_TEST_CRASH_AT` names this point.
  /// - Parameter name: the point, e.g. `rotate-after-commit`.
  public static func reach(_ name: String) {
    guard let value = getenv("VAULT_TEST_CRASH_AT") else { return }
    if String(cString: value) == name { _ = kill(getpid(), SIGKILL) }
  }
}
