import Foundation

/// Reads a passphrase from the controlling terminal with echo off (`/dev/tty`, so it works
/// when stdin is redirected). Returns nil when there is no terminal.
enum PassphrasePrompt {
  static func read(_ prompt: String) throws -> [UInt8]? {
    let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { _ = close(fd) }
    guard isatty(fd) == 1 else { return nil }
    var saved = termios()
    guard tcgetattr(fd, &saved) == 0 else { return nil }
    var silent = saved
    silent.c_lflag &= ~tcflag_t(ECHO)
    _ = tcsetattr(fd, TCSAFLUSH, &silent)
    defer {
      _ = tcsetattr(fd, TCSAFLUSH, &saved)
      _ = write(fd, "\n", 1)
    }
    _ = prompt.withCString { write(fd, $0, strlen($0)) }
    var bytes: [UInt8] = []
    var byte: UInt8 = 0
    while true {
      let n = Foundation.read(fd, &byte, 1)
      if n < 0 && errno == EINTR { continue }
      if n <= 0 || byte == UInt8(ascii: "\n") { break }
      bytes.append(byte)
      if bytes.count > 4096 { throw CLIError("passphrase is longer than 4096 bytes") }
    }
    if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
    return bytes
  }
}
