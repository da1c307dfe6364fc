@testable import AuthLedger
@testable import AuthLedgerCore
import AuthLedgerPostgres
import AuthLedgerTestSupport
import Foundation
import Testing

/// The writer and the replay on PostgreSQL without a thread waiting on PostgresNIO (#25,
/// step 3: `PostgresStorage.writeAsync`, `AsyncBatchScanning`): appends one at a time, a
/// large request, concurrent writers and a full replay leave the store's blocking-wait count
/// where it was, fetch what they missed and run again, and store what LMDB stores.
@Suite(.enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set (tools/test sets it)"))
struct AsyncWriteTests {
    /// A ledger whose personal values are hashed in clear, so that two stores given the same
    /// events store the same bytes and hashes.
    static func unsalted(_ kind: StorageKind) throws -> Ledger {
        let ledger = try kind.freshLedger()
        ledger.appendSwitches.sealPersonalData.store(false, ordering: .relaxed)
        return ledger
    }

    /// Every user's devices, through the async reads.
    static func views(_ ledger: Ledger, _ users: [String]) async throws -> [JSON] {
        var out: [JSON] = []
        for user in users { out.append(try await ledger.devices(user, QueryOptions(asOf: .max))) }
        return out
    }

    @Test func appendsAndAReplayOnPostgreSQLNeverWaitOnAThreadAndStoreWhatLMDBStores() async throws {
        // Given a PostgreSQL ledger and an LMDB one, and 16 users' events (a registration,
        // then accesses, some with personal values)
        let lmdb = try Self.unsalted(.lmdb)
        let pg = try Self.unsalted(.postgres)
        let storage = try #require(pg.storage as? PostgresStorage)
        let lines = HashPipelineTests.events(users: 16, each: 16)
        let waits = storage.connections.blockingWaits.value
        let (fills, blocking) = (storage.writeFills.value, storage.blockingWrites.value)
        // When 40 are appended one at a time and the next 200 in one request, on both
        for ledger in [lmdb, pg] {
            for l in lines.prefix(40) { _ = try await ledger.append(try inputs(l)) }
            let outcome = try await ledger.append(try inputs(lines[40..<240].joined(separator: "\n")))
            #expect(outcome.appended.count == 200)
        }
        // Then the heads and the views are LMDB's, no blocking wait was made, and the writes
        // fetched what they missed and ran again
        #expect(try await pg.head() == lmdb.head())
        let users = (0..<16).map { "user-\($0)" }
        #expect(try await Self.views(pg, users) == Self.views(lmdb, users))
        #expect(storage.connections.blockingWaits.value == waits)
        #expect(storage.writeFills.value > fills)

        // When 64 writers append at once, each its own user's events, one request after another
        let others = HashPipelineTests.events(users: 64, each: 3).map {
            $0.replacingOccurrences(of: "user-", with: "writer-").replacingOccurrences(of: "-0000-4000-", with: "-0001-4000-")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<64 {
                group.addTask {
                    for k in 0..<3 { _ = try await pg.append(try inputs(others[k * 64 + w])) }
                }
            }
            try await group.waitForAll()
        }
        #expect(storage.connections.blockingWaits.value == waits)
        // And the whole log is replayed
        let head = try await pg.head()
        #expect(head.seq == 240 + 192)
        #expect(try await pg.replay() == 240 + 192)
        // Then still no blocking wait was made, nor a write done blocking
        #expect(storage.connections.blockingWaits.value == waits)
        #expect(storage.blockingWrites.value == blocking)
        // And LMDB, given the log in PostgreSQL's order with its hashes (every `prev` and
        // `hash` checked), reaches the same head, views and tree
        _ = try lmdb.appendBlocking(try inputs(try pg.exportText()))
        #expect(try await lmdb.head() == head)
        let everyone = users + (0..<64).map { "writer-\($0)" }
        #expect(try await Self.views(pg, everyone) == Self.views(lmdb, everyone))
        #expect(try await pg.treeHead().root == lmdb.treeHead().root)
        #expect(try pg.verify() == head)
    }

    @Test func aWriteThatNeedsAnAnswerAtOnceIsRolledBackAndDoneBlockingOnce() async throws {
        // Given a PostgreSQL ledger where alice's first events carry personal values
        let pg = try StorageKind.postgres.freshLedger()
        let storage = try #require(pg.storage as? PostgresStorage)
        _ = try pg.importText(PersonalDataTests.history)
        let blocking = storage.blockingWrites.value
        // When an async write stores a value, then erases personal values (a DELETE …
        // RETURNING, whose answer the body needs at once)
        let erased = try await storage.writeAsync { w in
            try w.putMetaValue("async-write-test", [7])
            return try w.erasePersonalValues(user: "alice", before: 3)
        }
        // Then it was done blocking, once, and its work was done once
        #expect(storage.blockingWrites.value == blocking + 1)
        #expect(erased == [1, 2])
        #expect(try await pg.metaRecord("async-write-test") == [7])
        #expect(try storage.integers("SELECT count(*) FROM \(storage.tables.personal) WHERE seq < 3") == [0])
    }

    @Test func theSweepersExpiryOnPostgreSQLNeverWaitsOnAThread() async throws {
        // Given a PostgreSQL ledger with one unresolved challenge (alice's c1, due at 09:11)
        let pg = try StorageKind.postgres.freshLedger()
        let storage = try #require(pg.storage as? PostgresStorage)
        _ = try pg.importText(PersonalDataTests.history)
        let waits = storage.connections.blockingWaits.value
        // When the due challenges are expired through the async form, before and after it is due
        #expect(try await pg.expireDueChallenges(now: t("2026-03-01T09:10:00Z")).isEmpty)
        let expired = try await pg.expireDueChallenges(now: t("2026-03-02T00:00:00Z"))
        // Then c1 was expired, once, and no thread waited for PostgreSQL
        #expect(expired.map(\.event.type) == [.challengeExpired])
        #expect(try await pg.expireDueChallenges(now: t("2026-03-02T00:00:00Z")).isEmpty)
        #expect(storage.connections.blockingWaits.value == waits)
    }
}
