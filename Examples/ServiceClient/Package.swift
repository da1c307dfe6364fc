// swift-tools-version:6.1
// A Swift service on another host that talks to `authledger serve` through the
// `AuthLedgerClient` product only: it compiles no server, no driver, no LMDB and not the log
// (tools/check-layering builds it, checks exactly that, and runs it against `serve --dev`).
import PackageDescription

let package = Package(
    name: "ServiceClient",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "AuthLedger", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "ServiceClient",
            dependencies: [
                .product(name: "AuthLedgerClient", package: "AuthLedger"),
                .product(name: "AuthLedgerCore", package: "AuthLedger"),
            ]
        ),
    ]
)
