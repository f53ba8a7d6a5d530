// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "vault",
  platforms: [.macOS(.v14), .iOS(.v17)],
  products: [
    .library(name: "VaultCrypto", targets: ["VaultCrypto"]),
    .library(name: "VaultCore", targets: ["VaultCore"]),
    .library(name: "VaultLoader", targets: ["VaultLoader"]),
    .library(name: "LoopbackOrigin", targets: ["LoopbackOrigin"]),
    .library(name: "OriginClient", targets: ["OriginClient"]),
    .library(name: "VaultServer", targets: ["VaultServer"]),
    .executable(name: "vault", targets: ["vault"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
  ],
  targets: [
    // The only module that sees OpenSSL's C API; imported `internal` by VaultCrypto.
    .systemLibrary(
      name: "CLibCrypto",
      pkgConfig: "libcrypto",
      providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
    ),
    .target(name: "VaultCrypto", dependencies: ["CLibCrypto"]),
    // POSIX calls Swift cannot reach directly (sync_file_range); used by VaultCore only.
    .target(name: "CPosixShims"),
    .target(
      name: "VaultCore",
      dependencies: [
        "VaultCrypto", "CPosixShims", .product(name: "GRDB", package: "GRDB.swift"),
      ]
    ),
    // Range loader: answers byte ranges from the vault, fetches missing chunks from the origin.
    .target(name: "VaultLoader", dependencies: ["VaultCore"]),
    // The origin client for plain http:// on SwiftNIO (URLSession for the rest).
    .target(
      name: "OriginClient",
      dependencies: [
        "VaultLoader",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
      ]
    ),
    // Loopback HTTP proxy: serves imported assets and origin URLs (through the range loader) to players.
    .target(
      name: "VaultServer",
      dependencies: [
        "VaultCore", "VaultCrypto", "VaultLoader", "OriginClient",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
      ]
    ),
    // A small HTTP/1.1 origin on loopback that can misbehave on purpose (tests, demo, bench).
    .target(name: "LoopbackOrigin"),
    .executableTarget(
      name: "vault",
      dependencies: [
        "VaultCore", "VaultCrypto", "VaultLoader", "VaultServer", "OriginClient", "LoopbackOrigin",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      // The demo's sample: a 30 s H.264/AAC MP4 (909 KB), generated once with ffmpeg.
      resources: [.copy("Resources/demo-sample.mp4")]
    ),
    // Test support: child processes without Foundation's Process (see ChildProcess.swift).
    .target(name: "ChildProcess", path: "Tests/ChildProcess"),
    .testTarget(name: "VaultCryptoTests", dependencies: ["VaultCrypto"]),
    .testTarget(
      name: "VaultCoreTests",
      dependencies: ["VaultCore", "VaultCrypto", .product(name: "GRDB", package: "GRDB.swift")],
      exclude: ["Fixtures"]
    ),
    .testTarget(name: "LoopbackOriginTests", dependencies: ["LoopbackOrigin", "ChildProcess"]),
    .testTarget(
      name: "VaultLoaderTests",
      dependencies: ["VaultLoader", "VaultCore", "LoopbackOrigin", "OriginClient"]
    ),
    // Runs the built `vault` binary as a child process, as a user would.
    .testTarget(name: "VaultCLITests", dependencies: ["vault", "LoopbackOrigin"]),
    // Real clients (curl, ffmpeg, a socket load client) against the server on loopback.
    .testTarget(
      name: "VaultServerTests",
      dependencies: [
        "VaultServer", "VaultCore", "VaultLoader", "OriginClient", "LoopbackOrigin", "vault",
        "ChildProcess",
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
