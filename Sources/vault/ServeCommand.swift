import ArgumentParser
import Foundation
import OriginClient
import VaultCore
import VaultLoader
import VaultServer

extension VaultCommand {
  /// `vault serve`: a loopback HTTP server through which any player streams from the vault.
  struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "serve",
      abstract: "Serve the vault over loopback HTTP to players (mpv, ffplay, VLC, a browser).",
      discussion: """
        Prints one line on stdout when ready: the base URL, whose first path segment is a \
        random access token. Under it: assets/NAME (an imported asset) and \
        stream?url=ENCODED-URL[&id=CONTENT-ID] (an origin resource through the vault). \
        Logs one line per request on stderr. Ctrl-C or SIGTERM stops it (exit 0).
        """)

    @OptionGroup var options: VaultOptions

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port: Int = 0

    @Option(help: "Address to bind (default: loopback only). Other hosts can then connect.")
    var host: String = "127.0.0.1"

    @Flag(help: "Serve only what is stored; never contact an origin.")
    var offline = false

    @Option(help: "The one web origin (e.g. http://localhost:3000) allowed to read via CORS.")
    var cors: String?

    @Option(help: "Seconds without data before an origin request fails.")
    var timeout: Double = 30

    @Flag(help: "No per-request log lines on stderr.")
    var quiet = false

    @Sendable static func logLine(_ line: String) {
      FileHandle.standardError.write(Data("vault serve: \(line)\n".utf8))
    }

    func validate() throws {
      guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0...65535") }
    }

    func run() async throws {
      // Not `reportingErrorsAsync`: its interrupt handler exits at once, and serve stops
      // gracefully instead (see ShutdownSignal).
      let server: VaultServer
      do {
        let vault = try options.openVault()
        let loader = RangeLoader(
          vault: vault, origin: NIOHTTPOrigin(idleTimeout: timeout), offline: offline)
        installDiagnosticsHandler(loader)
        server = try await VaultServer.start(
          vault: vault, loader: loader, host: host, port: port, corsOrigin: cors,
          log: quiet ? nil : Self.logLine)
      } catch {
        printError("\(error)")
        throw ExitCode.failure
      }
      let signal = ShutdownSignal()
      // Unbuffered: a parent reading the pipe sees the line at once.
      FileHandle.standardOutput.write(Data((server.baseURL.absoluteString + "\n").utf8))
      let name = await signal.wait()
      FileHandle.standardError.write(Data("vault serve: \(name), stopping\n".utf8))
      await server.shutdown()
    }
  }
}

/// Waits for SIGINT or SIGTERM: the first one starts a graceful stop (exit 0), a second
/// one exits at once.
final class ShutdownSignal: Sendable {
  private let sources = Locked<[any DispatchSourceSignal]>([])

  func wait() async -> String {
    await withCheckedContinuation { (continuation: CheckedContinuation<String, Never>) in
      let fired = Locked(false)
      var made: [any DispatchSourceSignal] = []
      for (number, name) in [(SIGINT, "interrupted"), (SIGTERM, "terminated")] {
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
          let first = fired.withLock { done -> Bool in
            defer { done = true }
            return !done
          }
          if first {
            continuation.resume(returning: name)
          } else {
            // A second Ctrl-C while stopping: the user wants out now. Recorded chunks are
            // intact either way (stores are recorded only after they are synced).
            _exit(number == SIGINT ? 130 : 143)
          }
        }
        source.resume()
        made.append(source)
      }
      sources.withLock { $0 = made }
    }
  }
}
