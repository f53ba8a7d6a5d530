import ArgumentParser
import Foundation
import OriginClient
import VaultCore
import VaultLoader

/// Options shared by the commands that load from an origin.
struct OriginOptions: ParsableArguments {
  @Argument(help: "The resource URL (http or https).")
  var url: String

  @Option(name: .customLong("id"), help: "Content id: the cache key instead of the URL.")
  var contentID: String?

  @Option(help: "Seconds without data before an origin request fails.")
  var timeout: Double = 30

  func resourceURL() throws -> URL {
    guard let url = URL(string: url), let scheme = url.scheme?.lowercased(),
      scheme == "http" || scheme == "https", url.host != nil
    else {
      throw CLIError("not an http(s) URL: \(url)")
    }
    return url
  }
}

extension VaultCommand {
  /// `vault fetch`: read a resource (or a range) through the vault, fetching only what is missing.
  struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "fetch",
      abstract:
        "Read a URL (or a byte range) through the vault; only missing chunks come from the origin.")

    @OptionGroup var options: VaultOptions
    @OptionGroup var origin: OriginOptions

    @Option(help: "Inclusive byte range START-END (or START-), like HTTP.")
    var range: ByteRange?

    @Option(name: .shortAndLong, help: "Output file, or - for stdout (default: stdout).")
    var output: String = "-"

    @Flag(help: "Serve only what is stored; never contact the origin.")
    var offline = false

    func run() async throws {
      try await reportingErrorsAsync {
        let vault = try options.openVault()
        let url = try origin.resourceURL()
        let loader = RangeLoader(
          vault: vault, origin: NIOHTTPOrigin(idleTimeout: origin.timeout), offline: offline)
        installDiagnosticsHandler(loader)
        let sink = try OutputSink(path: output)
        let progress = ProgressLine("fetching")
        do {
          let info = try await loader.contentInfo(for: url, contentID: origin.contentID)
          let start = range?.start ?? 0
          let end = range?.end
          let total = (end.map { min($0, info.length &- 1) } ?? (info.length &- 1)) &- start &+ 1
          var done: UInt64 = 0
          for try await piece in loader.read(
            url, contentID: origin.contentID, from: start, through: end)
          {
            try sink.write(piece)
            done += UInt64(piece.count)
            progress.update(OperationProgress(bytesDone: done, bytesTotal: total))
          }
          progress.finish()
          try sink.commit()
          // Chunks reach the reader before they are sealed: keep them before exiting.
          try await loader.flush()
        } catch {
          progress.finish()
          sink.discard()
          throw CLIError("\(error)")
        }
        let stats = await loader.statistics
        if output != "-" {
          print(
            "fetched \(formatBytes(stats.bytesDelivered)): \(formatBytes(stats.bytesFromCache)) from the vault, "
              + "\(formatBytes(stats.bytesFromOrigin)) from the origin in \(stats.originRequests) request\(stats.originRequests == 1 ? "" : "s")"
          )
        }
      }
    }
  }

  /// `vault prefetch`: warm the start of a resource, or all of it for offline use.
  struct Prefetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "prefetch",
      abstract: "Store the first bytes of a URL, or all of it (--all --pin for offline use).")

    @OptionGroup var options: VaultOptions
    @OptionGroup var origin: OriginOptions

    @Option(help: "How many leading bytes to store (e.g. 2MiB).")
    var bytes: ByteCount?

    @Flag(help: "Store the whole resource.")
    var all = false

    @Flag(help: "Pin the asset: eviction never removes it.")
    var pin = false

    @OptionGroup var lease: LeaseOptions

    func validate() throws {
      guard all != (bytes != nil) else {
        throw ValidationError("give exactly one of --bytes N or --all")
      }
    }

    func run() async throws {
      try await reportingErrorsAsync {
        let vault = try options.openVault()
        let url = try origin.resourceURL()
        let loader = RangeLoader(vault: vault, origin: NIOHTTPOrigin(idleTimeout: origin.timeout))
        do {
          let stored = try await loader.prefetch(
            url, contentID: origin.contentID, bytes: bytes.map { UInt64($0.value) }, pin: pin)
          let id = try loader.assetID(for: url, contentID: origin.contentID)
          if let lease = lease.lease(now: Date()) { try vault.setLease(lease, on: id) }
          let stats = await loader.statistics
          print(
            "prefetched \(formatBytes(stored)) of \(id.short)\(pin ? " (pinned)" : ""): "
              + "\(formatBytes(stats.bytesFromOrigin)) from the origin")
        } catch let error as LoaderError {
          throw CLIError(error.description)
        }
      }
    }
  }
}

/// Where fetched bytes go: stdout, or a temp file renamed into place when complete.
final class OutputSink {
  private let handle: FileHandle
  private let temp: String?
  private let path: String

  init(path: String) throws {
    self.path = path
    if path == "-" {
      handle = FileHandle.standardOutput
      temp = nil
    } else {
      let url = URL(fileURLWithPath: path)
      let temp = url.deletingLastPathComponent()
        .appendingPathComponent(".\(url.lastPathComponent).partial-\(getpid())").path
      guard FileManager.default.createFile(atPath: temp, contents: nil),
        let handle = FileHandle(forWritingAtPath: temp)
      else {
        throw CLIError("cannot create \(temp)")
      }
      self.handle = handle
      self.temp = temp
      InterruptCleanup.add { unlink(temp) }
    }
  }

  func write(_ bytes: [UInt8]) throws {
    try handle.write(contentsOf: Data(bytes))
  }

  func commit() throws {
    guard let temp else { return }
    try handle.synchronize()
    try handle.close()
    guard rename(temp, path) == 0 else {
      throw CLIError("cannot rename \(temp) to \(path): \(String(cString: strerror(errno)))")
    }
  }

  func discard() {
    guard let temp else { return }
    try? handle.close()
    unlink(temp)
  }
}
