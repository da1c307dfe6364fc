@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
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

extension StorageBackend {
    /// A test's synchronous read of either store: LMDB's in place; PostgreSQL's waiting on
    /// the calling thread (`PostgresStorage.read`, for tests until it goes). The storage
    /// protocols have none: the library reads PostgreSQL through `readAsync`.
    func read<T>(_ body: (any StorageReader) throws -> T) throws -> T {
        if let s = self as? PostgresStorage { return try s.read(body) }
        guard let s = self as? any InPlaceStorage else { throw LedgerError(.storageError, "not a store the tests read") }
        return try Self.inPlaceRead(s, body)
    }

    /// A test's synchronous write of either store (see `read`).
    func write<T>(_ body: (any StorageWriter) throws -> T) throws -> T {
        if let s = self as? PostgresStorage { return try s.write(body) }
        guard let s = self as? any InPlaceStorage else { throw LedgerError(.storageError, "not a store the tests write") }
        return try Self.inPlaceWrite(s, body)
    }

    private static func inPlaceRead<S: InPlaceStorage, T>(_ s: S, _ body: (any StorageReader) throws -> T) throws -> T { try s.read(body) }
    private static func inPlaceWrite<S: InPlaceStorage, T>(_ s: S, _ body: (any StorageWriter) throws -> T) throws -> T { try s.write(body) }
}
