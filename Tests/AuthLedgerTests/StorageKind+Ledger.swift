@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import AuthLedgerTestSupport
import Foundation
import Testing

extension StorageKind {
    /// Opens `store` (from `freshStore`); a PostgreSQL store keeps its key files in `keys`.
    func open(_ store: String, keys: String? = nil) async throws -> Ledger {
        try await Ledger(store: store, configuration: .init(keyDirectory: keys ?? keyDirectory(for: store)))
    }

    /// A ledger on a new empty store.
    func freshLedger() async throws -> Ledger { try await open(freshStore()) }
}

/// Says so when the PostgreSQL half of the suites does not run, and fails where it must
/// (tools/test sets AUTHLEDGER_REQUIRE_POSTGRES: CI never skips it silently).
@Suite struct StorageBackendAvailability {
    @Test func thePostgreSQLBackendRunsWhereRequired() async throws {
        if StorageKind.postgresURL == nil {
            if StorageKind.postgresRequired {
                Issue.record("AUTHLEDGER_REQUIRE_POSTGRES=1 but AUTHLEDGER_TEST_POSTGRES is not set: the PostgreSQL suites cannot run")
            } else {
                print("note: AUTHLEDGER_TEST_POSTGRES is not set: the storage conformance suites run on LMDB only (tools/test starts a PostgreSQL and runs both)")
            }
        }
        // Where a database is named, it is really there: a store opens and takes an event.
        if StorageKind.postgresURL != nil {
            #expect(StorageKind.all == [.lmdb, .postgres])
            let ledger = try await StorageKind.postgres.freshLedger()
            _ = try await ledger.append(try inputs(line("device.registered", at: "2026-03-01T09:00:00Z",
                data: #"{"deviceId":"phone","name":"Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)))
            #expect(try await ledger.verify().seq == 1)
        }
    }
}
