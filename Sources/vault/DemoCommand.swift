import ArgumentParser
import Foundation
import VaultCore

extension VaultCommand {
  /// `vault demo`: the README's first command. Builds a demo vault with the published demo
  /// key and shows what the vault does, with numbers.
  struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "demo",
      abstract: "Create a demo vault (demo key: NOT for real data), import, read, verify.",
      discussion: """
        Uses Keys/demo.key (or the same key built into the binary). A vault at --vault that \
        an earlier demo made is replaced.
        """)

    @Option(help: "Demo vault directory.")
    var vault = "demo-vault"

    @Option(help: "Size of the generated sample.")
    var size = ByteCount(24 << 20)

    func run() throws {
      try reportingErrors {
        let key = try DemoKey.load()
        let fm = FileManager.default
        if fm.fileExists(atPath: vault) {
          // Replace only a vault an earlier demo made: one the demo key opens.
          do {
            _ = try Vault.open(at: vault, masterKey: key)
          } catch {
            throw CLIError(
              "\(vault) exists and is not a demo vault (\(error)); pick another --vault")
          }
          try fm.removeItem(atPath: vault)
        }
        let sampleDirectory = fm.temporaryDirectory.appendingPathComponent(
          "vault-demo-\(getpid())")
        try fm.createDirectory(at: sampleDirectory, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: sampleDirectory) }
        let samplePath = sampleDirectory.appendingPathComponent("sample.bin").path
        let sample = DemoSample.make(size: size.value)
        try Data(sample).write(to: URL(fileURLWithPath: samplePath))

        print("vault demo — demo key \(key.keyID) (published in Keys/: never use it for real data)")
        let store = try Vault.create(at: vault, masterKey: key)
        print("1. created \(vault)/ (chunk size \(store.chunkSize / 1024) KiB)")

        var started = Date()
        let info = try store.importFile(
          at: samplePath, name: "sample.bin", contentType: "application/octet-stream")
        var seconds = Date().timeIntervalSince(started)
        print(
          "2. imported sample.bin: \(formatBytes(info.size)) in \(info.chunksTotal) sealed chunks, "
            + "\(rate(info.size, seconds))")

        let reader = try store.reader(for: try store.resolve("sample.bin"))
        let offset = UInt64(sample.count * 2 / 5)
        let bytes = try reader.read(offset: offset, count: min(4096, sample.count - Int(offset)))
        let matches = bytes[...] == sample[Int(offset)..<min(Int(offset) + 4096, sample.count)]
        print(
          "3. read 4 KiB at offset \(offset): \(matches ? "matches the source" : "MISMATCH"), "
            + "opened \(reader.chunksOpened) of \(info.chunksTotal) chunks")

        let exportPath = sampleDirectory.appendingPathComponent("range.bin").path
        let range: ClosedRange<UInt64> = UInt64(sample.count / 10)...UInt64(sample.count / 10 * 3)
        started = Date()
        try store.export(info.idValue, to: exportPath, range: range)
        seconds = Date().timeIntervalSince(started)
        let exported = try Data(contentsOf: URL(fileURLWithPath: exportPath))
        let rangeMatches =
          exported == Data(sample[Int(range.lowerBound)...Int(range.upperBound)])
        print(
          "4. exported bytes \(range.lowerBound)-\(range.upperBound): "
            + "\(rangeMatches ? "identical to the source" : "MISMATCH") (\(rate(UInt64(exported.count), seconds)))"
        )

        let results = try store.verify()
        let chunks = results.reduce(0) { $0 + $1.chunksChecked }
        print(
          "5. verify: \(results.allSatisfy(\.ok) ? "ok" : "FAILED"), \(chunks) chunks authenticated"
        )

        let leaks = try DemoSample.findMarker(in: vault)
        print(
          "6. plaintext at rest: marker \"\(DemoSample.marker)\" found in \(leaks.count) vault files"
            + (leaks.isEmpty ? " (sealed)" : ": \(leaks)"))

        let wrong = try MasterKey.generate()
        do {
          _ = try Vault.open(at: vault, masterKey: wrong)
          print("7. wrong key: OPENED (bug)")
        } catch {
          print("7. wrong key: refused — \(error)")
        }
        print("\nTry it yourself:")
        print("  swift run vault list --vault \(vault) --key-file Keys/demo.key")
        print(
          "  swift run vault export sample.bin --range 0-15 --vault \(vault) --key-file Keys/demo.key | od -c"
        )
        guard matches, rangeMatches, results.allSatisfy(\.ok), leaks.isEmpty else {
          throw CLIError("the demo found a problem (see above)")
        }
      }
    }

    private func rate(_ bytes: UInt64, _ seconds: Double) -> String {
      "\(formatBytes(UInt64(Double(bytes) / max(seconds, 0.000_001))))/s"
    }
  }
}

extension AssetInfo {
  /// The typed id of this asset.
  var idValue: AssetID {
    get throws {
      guard let id = AssetID(hex: id) else { throw CLIError("malformed asset id \(id)") }
      return id
    }
  }
}

/// A deterministic sample with a recognisable plaintext marker every 64 KiB.
enum DemoSample {
  static let marker = "VAULT-DEMO-PLAINTEXT-MARKER"

  static func make(size: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: size)
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for i in 0..<size {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      bytes[i] = UInt8(truncatingIfNeeded: state >> 56)
    }
    let markerBytes = Array(marker.utf8)
    var position = 0
    while position + markerBytes.count <= size {
      bytes.replaceSubrange(position..<(position + markerBytes.count), with: markerBytes)
      position += 65_536
    }
    return bytes
  }

  /// Files under `directory` that contain the marker.
  static func findMarker(in directory: String) throws -> [String] {
    let needle = Data(marker.utf8)
    var found: [String] = []
    let enumerator = FileManager.default.enumerator(atPath: directory)
    while let relative = enumerator?.nextObject() as? String {
      let path = directory + "/" + relative
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
        !isDirectory.boolValue
      else { continue }
      if let data = FileManager.default.contents(atPath: path), data.range(of: needle) != nil {
        found.append(relative)
      }
    }
    return found
  }
}

/// The published demo key (same bytes as Keys/demo.key). For the demo and tests only.
enum DemoKey {
  static let text = """
    # PUBLISHED DEMO KEY: used by the README quickstart (`vault demo`) and the tests only.
    # Everyone has this key. Never protect real data with it; run `vault init` for a real one.
    vault-key 1
    id 13edc813c83d4a24
    key Be8w1LeigTPYD3AVcOQVzj3LER6FrdLve9iuVnK/gck=
    """

  /// Keys/demo.key when run from the repository, else the built-in copy.
  static func load() throws -> MasterKey {
    if FileManager.default.fileExists(atPath: "Keys/demo.key") {
      return try KeyFile.read(at: "Keys/demo.key")
    }
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
      "vault-demo-key-\(getpid())"
    ).path
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try KeyFile.read(at: path)
  }
}
