// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "AuthLedger",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "AuthLedgerCore", targets: ["AuthLedgerCore"]),
        .library(name: "AuthLedger", targets: ["AuthLedger"]),
        .library(name: "AuthLedgerLMDB", targets: ["AuthLedgerLMDB"]),
        .library(name: "AuthLedgerPostgres", targets: ["AuthLedgerPostgres"]),
        .library(name: "AuthLedgerSharedSignals", targets: ["AuthLedgerSharedSignals"]),
        .library(name: "AuthLedgerServer", targets: ["AuthLedgerServer"]),
        .library(name: "AuthLedgerWitness", targets: ["AuthLedgerWitness"]),
        .library(name: "AuthLedgerClient", targets: ["AuthLedgerClient"]),
        .executable(name: "authledger", targets: ["authledger"]),
        .executable(name: "authledger-bench", targets: ["authledger-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        // The PostgreSQL storage backend (`--store postgresql://…`).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // `serve --config FILE` (YAML or JSON).
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // `swift package generate-documentation` (tools/docs): the DocC catalogs under Sources/.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // AuthLedgerClient reads Server-Sent Events with OpenAPIRuntime's decoder.
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // SHA-256 of the log's per-event hashes (leaves, chain hashes, tree nodes, stream
        // steps) from the system's libcrypto: no context allocated per hash (the shim's header).
        .systemLibrary(
            name: "CLibCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "LMDB", dependencies: ["CLMDB"]),
        // The domain: events, the rules (`evolve`, `decide`), answers. No storage, no I/O, no
        // environment; ids, clocks and secrets are passed in.
        .target(
            name: "AuthLedgerCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // The log: codec, the storage protocol, the writer (group commit), the Merkle tree and
        // checkpoints, subscriptions, erasure, the facade. No driver: a store comes from one.
        .target(
            name: "AuthLedger",
            dependencies: [
                "AuthLedgerCore",
                "CLibCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The embedded driver (the default): the log in an LMDB directory. `Ledger(lmdb:)`.
        .target(
            name: "AuthLedgerLMDB",
            dependencies: [
                "AuthLedger",
                "LMDB",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The PostgreSQL driver (PostgresNIO): several servers on one database. `Ledger(postgres:)`.
        .target(
            name: "AuthLedgerPostgres",
            dependencies: [
                "AuthLedger",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // A C2SP witness (`authledger witness`) and the cosignature/policy formats the log and
        // its auditors use; an embedder of the ledger alone never compiles it.
        .target(
            name: "AuthLedgerWitness",
            dependencies: [
                "AuthLedger",
                "LMDB",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The OpenID Shared Signals transmitter (SSF streams, SETs, push and poll delivery)
        // over any ledger: no driver, no HTTP server (the server serves its routes).
        .target(
            name: "AuthLedgerSharedSignals",
            dependencies: [
                "AuthLedger",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A client of `authledger serve` for Swift services on other hosts: the HTTP API as
        // typed async calls over the core's own types; no server, driver or LMDB code.
        .target(
            name: "AuthLedgerClient",
            dependencies: [
                "AuthLedgerCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]
        ),
        .target(
            name: "AuthLedgerServer",
            dependencies: [
                "AuthLedger",
                "AuthLedgerSharedSignals",
                "AuthLedgerWitness",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // Service identity: the identity provider's JWTs, TLS and client certificates on the listener.
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            // The auditor console's static files, served at /console (ConsoleAssets).
            resources: [.copy("Console")]
        ),
        .executableTarget(
            name: "authledger",
            dependencies: [
                "AuthLedger",
                "AuthLedgerLMDB",
                "AuthLedgerPostgres",
                "AuthLedgerServer",
                "AuthLedgerSharedSignals",
                "AuthLedgerWitness",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        // `authledger bench` (the CLI runs it): the ledger beside raw LMDB, SQLite and
        // PostgreSQL ceilings, so only this executable links the raw engines.
        .executableTarget(
            name: "authledger-bench",
            dependencies: [
                "AuthLedger",
                "AuthLedgerLMDB",
                "AuthLedgerPostgres",
                "AuthLedgerServer",
                "AuthLedgerSharedSignals",
                "AuthLedgerWitness",
                "LMDB",
                "CSQLite",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The two examples' sources (each also a package of its own under Examples/, as a
        // user builds it), built here too: tools/check-layering reads what each executable
        // links, type-checks its sources as a program outside this package and runs it.
        // Built only in their own packages, they compiled every dependency a second time in
        // a build directory of their own: nine minutes of a cold CI run.
        .executableTarget(name: "example-embedded-ledger", dependencies: ["AuthLedger", "AuthLedgerLMDB"],
                          path: "Examples/EmbeddedLedger/Sources/EmbeddedLedger"),
        .executableTarget(name: "example-service-client", dependencies: ["AuthLedgerClient", "AuthLedgerCore"],
                          path: "Examples/ServiceClient/Sources/ServiceClient"),
        // libFuzzer targets (tools/fuzz builds them with -sanitize=fuzzer -DFUZZING); a file replayer otherwise.
        .executableTarget(name: "authledger-fuzz", dependencies: ["AuthLedgerFuzzChecks"]),
        // The fuzz targets' checks (round trips of every decoder, the HTTP router in process),
        // shared by the fuzz executable and the regression tests; no product: not for embedders.
        .target(
            name: "AuthLedgerFuzzChecks",
            dependencies: [
                "AuthLedger",
                "AuthLedgerLMDB",
                "AuthLedgerServer",
                "AuthLedgerSharedSignals",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        // Test helpers shared by the test targets (a small real filesystem for full-disk tests,
        // the storage backends the conformance suites run on).
        .target(name: "AuthLedgerTestSupport", dependencies: ["AuthLedgerLMDB", "AuthLedgerPostgres"], path: "Tests/TestSupport"),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB", "AuthLedgerTestSupport"]),
        .testTarget(
            name: "AuthLedgerWitnessTests",
            dependencies: ["AuthLedgerWitness", "AuthLedger", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(name: "AuthLedgerTests", dependencies: ["AuthLedger", "AuthLedgerCore", "AuthLedgerLMDB", "AuthLedgerPostgres", "AuthLedgerFuzzChecks", "AuthLedgerTestSupport", "AuthLedgerWitness"]),
        .testTarget(
            name: "AuthLedgerServerTests",
            dependencies: [
                "AuthLedgerServer",
                "AuthLedgerClient",
                "AuthLedgerSharedSignals",
                "AuthLedgerLMDB",
                "AuthLedgerPostgres",
                "AuthLedgerFuzzChecks",
                "AuthLedgerWitness",
                "AuthLedgerTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ]
)

// `tools/fuzz` builds the fuzz targets in the package's own build directory with
// AUTHLEDGER_FUZZ_BUILD=1: this package's Swift modules instrumented for libFuzzer's
// coverage and AddressSanitizer, with FUZZING defined; the dependencies stay as the debug
// build compiled them. A separate build directory instrumented everything, and building
// every dependency a second time was most of CI's fuzzing pass (docs/BENCHMARKS.md, "CI time").
if Context.environment["AUTHLEDGER_FUZZ_BUILD"] == "1" {
    for target in package.targets where target.type == .regular || target.type == .executable {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=fuzzer,address"]), .define("FUZZING")]
    }
    for target in package.targets where target.name == "authledger-fuzz" {
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=fuzzer,address"])]
    }
}
