// swift-tools-version:6.1
// A Swift service that embeds AuthLedger on its default store, LMDB, and nothing else:
// it depends on the `AuthLedger` and `AuthLedgerLMDB` products only, so it compiles
// neither PostgresNIO, NIOSSL, JWTKit nor Hummingbird (tools/check-layering builds it and
// checks exactly that).
import PackageDescription

let package = Package(
    name: "EmbeddedLedger",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "AuthLedger", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "EmbeddedLedger",
            dependencies: [
                .product(name: "AuthLedger", package: "AuthLedger"),
                .product(name: "AuthLedgerLMDB", package: "AuthLedger"),
            ]
        ),
    ]
)
