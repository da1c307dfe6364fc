// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "AuthLedger",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "AuthLedger", targets: ["AuthLedger"]),
        .executable(name: "authledger", targets: ["authledger"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .target(name: "LMDB", dependencies: ["CLMDB"]),
        .target(
            name: "AuthLedger",
            dependencies: [
                "LMDB",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "authledger",
            dependencies: [
                "AuthLedger",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // libFuzzer targets (tools/fuzz builds them with -sanitize=fuzzer -DFUZZING); a file replayer otherwise.
        .executableTarget(name: "authledger-fuzz", dependencies: ["AuthLedger"]),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB"]),
        .testTarget(name: "AuthLedgerTests", dependencies: ["AuthLedger"]),
    ]
)
