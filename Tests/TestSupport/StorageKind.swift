import Foundation

/// The storage backends the conformance suites run on: the LMDB store always, the
/// PostgreSQL store when `AUTHLEDGER_TEST_POSTGRES` names a database (tools/test starts a
/// throwaway server and sets it; CI therefore always runs both).
///
/// Shared by the test targets; a test opens a store it names with
/// `Ledger(store:configuration:)`, which picks the driver as the `authledger` tool does.
public enum StorageKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case lmdb, postgres

    /// The backends to run on here.
    public static var all: [StorageKind] { postgresURL == nil ? [.lmdb] : [.lmdb, .postgres] }

    /// The test database's URL (it may hold a password: never printed).
    public static var postgresURL: String? {
        guard let url = ProcessInfo.processInfo.environment["AUTHLEDGER_TEST_POSTGRES"], !url.isEmpty else { return nil }
        return url
    }

    /// Whether tools/test asked for the PostgreSQL half (AUTHLEDGER_REQUIRE_POSTGRES=1): it may not be skipped then.
    public static var postgresRequired: Bool {
        ProcessInfo.processInfo.environment["AUTHLEDGER_REQUIRE_POSTGRES"] == "1"
    }

    /// The name in test output (`lmdb`, `postgres`).
    public var description: String { rawValue }

    /// A new empty store's name: a new temporary LMDB directory, or a PostgreSQL URL with a
    /// schema of its own in the test database (schemas are cheap; the server is thrown away).
    public func freshStore() -> String {
        switch self {
        case .lmdb:
            return StorageKind.temporaryDirectory()
        case .postgres:
            guard let url = StorageKind.postgresURL else { fatalError("AUTHLEDGER_TEST_POSTGRES is not set") }
            let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            return url + (url.contains("?") ? "&" : "?") + "schema=" + schema
        }
    }

    /// The directory of the files kept beside the log (keys) for `store`: the LMDB store
    /// directory itself, a new temporary directory (0700) for a PostgreSQL store.
    public func keyDirectory(for store: String) -> String {
        self == .lmdb ? store : StorageKind.temporaryDirectory()
    }

    /// A new directory under the system temporary directory, removed when the tests end.
    public static func temporaryDirectory(_ prefix: String = "authledger-test") -> String {
        TemporaryDirectory.make(prefix)
    }
}
