import ArgumentParser
import Foundation
import VaultCore
import VaultLoader

/// A usage or runtime problem found by the CLI itself, shown as one line.
struct CLIError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// Runs a command body; any error becomes one line on stderr and exit status 1.
func reportingErrors(_ body: () throws -> Void) throws {
  installInterruptHandler()
  do {
    try body()
  } catch let error as ExitCode {
    throw error
  } catch let error as VaultError {
    printError(error.description)
    throw ExitCode.failure
  } catch let error as CLIError {
    printError(error.description)
    throw ExitCode.failure
  } catch {
    printError("\(error)")
    throw ExitCode.failure
  }
}

/// The async form of ``reportingErrors(_:)``.
func reportingErrorsAsync(_ body: () async throws -> Void) async throws {
  installInterruptHandler()
  do {
    try await body()
  } catch let error as ExitCode {
    throw error
  } catch let error as VaultError {
    printError(error.description)
    throw ExitCode.failure
  } catch {
    printError("\(error)")
    throw ExitCode.failure
  }
}

func printError(_ message: String) {
  FileHandle.standardError.write(Data("vault: error: \(message)\n".utf8))
}

/// Extra work for the interrupt handler (e.g. removing a benchmark's scratch directory).
enum InterruptCleanup {
  private static let lock = NSLock()
  nonisolated(unsafe) private static var registered: [@Sendable () -> Void] = []

  /// Adds an action run on SIGINT/SIGTERM before the process exits.
  static func add(_ action: @escaping @Sendable () -> Void) {
    lock.withLock { registered.append(action) }
  }

  static var actions: [@Sendable () -> Void] { lock.withLock { registered } }
}

nonisolated(unsafe) private var interruptSources: [any DispatchSourceSignal] = []

/// On SIGINT/SIGTERM: delete partial export files, then exit 130/143. Nothing is recorded
/// half-way in the vault itself (writes are recorded only after they are synced).
func installInterruptHandler() {
  guard interruptSources.isEmpty else { return }
  for (signalNumber, status) in [(SIGINT, Int32(130)), (SIGTERM, Int32(143))] {
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
    source.setEventHandler {
      PartialFiles.removeAll()
      for cleanup in InterruptCleanup.actions { cleanup() }
      FileHandle.standardError.write(Data("\nvault: interrupted\n".utf8))
      // _exit, not exit: atexit handlers (OpenSSL's cleanup among them) must not run while
      // other threads are still inside libcrypto.
      _exit(status)
    }
    source.resume()
    interruptSources.append(source)
  }
}

nonisolated(unsafe) private var diagnosticsSource: (any DispatchSourceSignal)?

/// On SIGUSR1: print the loader's state to stderr (what it fetches, what readers wait on),
/// for diagnosing a read that does not progress. The process keeps running.
func installDiagnosticsHandler(_ loader: RangeLoader) {
  guard diagnosticsSource == nil else { return }
  signal(SIGUSR1, SIG_IGN)
  let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
  source.setEventHandler {
    Task {
      let text = await loader.diagnostics()
      FileHandle.standardError.write(Data("vault: \(text)\n".utf8))
    }
  }
  source.resume()
  diagnosticsSource = source
}
