@_spi(Storage) @testable import AuthLedger
@testable import AuthLedgerCore
import Foundation
import Testing

/// The storage backends the conformance suites run on: the LMDB store always, the
/// PostgreSQL store when `AUTHLEDGER_TEST_POSTGRES` names a database (tools/test starts a
/// throwaway server and sets it; CI therefore always runs both).
enum StorageKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case lmdb, postgres

    /// The backends to run on here.
    static var all: [StorageKind] { postgresURL == nil ? [.lmdb] : [.lmdb, .postgres] }

    /// The test database's URL (it may hold a password: never printed).
    static var postgresURL: String? {
        guard let url = ProcessInfo.processInfo.environment["AUTHLEDGER_TEST_POSTGRES"], !url.isEmpty else { return nil }
        return url
    }

    var testDescription: String { rawValue }

    /// A new empty store's name: a temporary LMDB directory, or a PostgreSQL URL with a
    /// schema of its own in the test database.
    func freshStore() -> String {
        switch self {
        case .lmdb:
            return Support.tempDir()
        case .postgres:
            guard let url = StorageKind.postgresURL else { fatalError("AUTHLEDGER_TEST_POSTGRES is not set") }
            let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            return url + (url.contains("?") ? "&" : "?") + "schema=" + schema
        }
    }

    /// Opens `store` (from `freshStore`); a PostgreSQL store keeps its key files in `keys`.
    func open(_ store: String, keys: String? = nil) throws -> Ledger {
        switch self {
        case .lmdb: return try Ledger(path: store)
        case .postgres: return try Ledger(storage: PostgresStorage(url: store), path: keys ?? Support.tempDir())
        }
    }

    /// A ledger on a new empty store.
    func freshLedger() throws -> Ledger { try open(freshStore()) }
}

/// Says so when the PostgreSQL half of the suites does not run, and fails where it must
/// (tools/test sets AUTHLEDGER_REQUIRE_POSTGRES: CI never skips it silently).
@Suite struct StorageBackendAvailability {
    @Test func thePostgreSQLBackendRunsWhereRequired() {
        let required = ProcessInfo.processInfo.environment["AUTHLEDGER_REQUIRE_POSTGRES"] == "1"
        if StorageKind.postgresURL == nil {
            if required {
                Issue.record("AUTHLEDGER_REQUIRE_POSTGRES=1 but AUTHLEDGER_TEST_POSTGRES is not set: the PostgreSQL suites cannot run")
            } else {
                print("note: AUTHLEDGER_TEST_POSTGRES is not set: the storage conformance suites run on LMDB only (tools/test starts a PostgreSQL and runs both)")
            }
        }
        #expect(StorageKind.all.contains(.lmdb))
    }
}
