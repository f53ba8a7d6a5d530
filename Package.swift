// swift-tools-version: 6.0
import PackageDescription

let package = Package(
  name: "vault",
  platforms: [.macOS(.v14), .iOS(.v17)],
  products: [
    .library(name: "VaultCrypto", targets: ["VaultCrypto"]),
    .library(name: "VaultCore", targets: ["VaultCore"]),
    .executable(name: "vault", targets: ["vault"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
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
    .executableTarget(
      name: "vault",
      dependencies: [
        "VaultCore", "VaultCrypto",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ]
    ),
    .testTarget(name: "VaultCryptoTests", dependencies: ["VaultCrypto"]),
    .testTarget(
      name: "VaultCoreTests",
      dependencies: ["VaultCore", "VaultCrypto", .product(name: "GRDB", package: "GRDB.swift")],
      exclude: ["Fixtures"]
    ),
    // Runs the built `vault` binary as a child process, as a user would.
    .testTarget(name: "VaultCLITests", dependencies: ["vault"]),
  ],
  swiftLanguageModes: [.v6]
)
