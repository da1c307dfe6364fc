// swift-tools-version:6.1
// A Swift service on another host than the ledger: it depends on the `AuthLedgerClient`
// product only, so it compiles no server, no driver and no LMDB (tools/check-layering
// builds it and checks exactly that).
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
            ]
        ),
    ]
)
