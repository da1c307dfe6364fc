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

extension Ledger {
    /// A test's write transaction on either store, as a commit group writes: what `body`
    /// reads is named first (`states`, `meta`, `erased`, `appends`; PostgreSQL loads it in
    /// one step and refuses any other read; LMDB reads in place), then `body` writes, and
    /// the writes are durable when it returns. Not through the ledger's writer task (what
    /// another process's writer does).
    func write<T: Sendable>(states: [String] = [], meta: [String] = [], erased: [String] = [], appends: Bool = false,
                            _ body: (any StorageWriter) throws -> T) async throws -> T {
        var load = StorageLoad()
        load.states = states
        load.meta = meta
        load.erased = erased
        load.appends = appends
        return try await storage.writeGroup(start: { _, _ in }, load: { load }, body)
    }
}

extension ReadLoad {
    /// The log from `from` on (at most `limit` events), with the events' personal values.
    static func log(from: UInt64 = 1, limit: Int = 1 << 20) -> ReadLoad {
        var load = ReadLoad()
        load.log = [(from, limit)]
        return load
    }

    /// The count of stored tree hashes (`treeHashCount`).
    static var treeHashCount: ReadLoad {
        var load = ReadLoad()
        load.treeSize = true
        return load
    }
}

extension Ledger {
    /// Every stored Merkle tree hash, by index (a hash the store lacks is not in it).
    func storedHashes() async throws -> [UInt64: [UInt8]] {
        try await read(.treeHashCount, then: { r in
            var load = ReadLoad()
            load.tree = [0..<(try r.treeHashCount())]
            return load
        }) { r in
            var out: [UInt64: [UInt8]] = [:]
            for i in 0..<(try r.treeHashCount()) {
                if let hash = try r.withTreeHash(i, { $0.map(Array.init) }) { out[i] = hash }
            }
            return out
        }
    }
}
