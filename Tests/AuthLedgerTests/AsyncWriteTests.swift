@testable import AuthLedger
@testable import AuthLedgerCore
import AuthLedgerPostgres
import AuthLedgerTestSupport
import Foundation
import Testing

/// The writer and the replay on PostgreSQL without a thread waiting on PostgresNIO (#25,
/// step 3, #34: `PostgresStorage.writeGroup`, `AsyncBatchScanning`): appends one at a time, a
/// large request, concurrent writers and a full replay leave the store's blocking-wait count
/// where it was, read only what their load step named, and store what LMDB stores; so does
/// opening a store, whatever it upgrades.
@Suite(.enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set (tools/test sets it)"))
struct AsyncWriteTests {
    /// A ledger whose personal values are hashed in clear, so that two stores given the same
    /// events store the same bytes and hashes.
    static func unsalted(_ kind: StorageKind) async throws -> Ledger {
        let ledger = try await kind.freshLedger()
        ledger.appendSwitches.sealPersonalData.store(false, ordering: .relaxed)
        return ledger
    }

    /// Every user's devices, through the async reads.
    static func views(_ ledger: Ledger, _ users: [String]) async throws -> [JSON] {
        var out: [JSON] = []
        for user in users { out.append(try await ledger.devices(of: user, QueryOptions(asOf: .max)).json) }
        return out
    }

    @Test func appendsAndAReplayOnPostgreSQLNeverWaitOnAThreadAndStoreWhatLMDBStores() async throws {
        // Given a PostgreSQL ledger and an LMDB one, and 16 users' events (a registration,
        // then accesses, some with personal values)
        let lmdb = try await Self.unsalted(.lmdb)
        let pg = try await Self.unsalted(.postgres)
        let storage = try #require(pg.storage as? PostgresStorage)
        let lines = HashPipelineTests.events(users: 16, each: 16)
        let unloaded = storage.unloadedReads.value
        // When 40 are appended one at a time and the next 200 in one request, on both
        for ledger in [lmdb, pg] {
            for l in lines.prefix(40) { _ = try await ledger.append(try inputs(l)) }
            let outcome = try await ledger.append(try inputs(lines[40..<240].joined(separator: "\n")))
            #expect(outcome.appended.count == 200)
        }
        // Then the heads and the views are LMDB's, and each group's
        // load step read everything its appends needed: nothing was read that it had not loaded
        #expect(try await pg.head() == lmdb.head())
        let users = (0..<16).map { "user-\($0)" }
        #expect(try await Self.views(pg, users) == Self.views(lmdb, users))
        #expect(storage.unloadedReads.value == unloaded)

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
        // And the whole log is replayed
        let head = try await pg.head()
        #expect(head.seq == 240 + 192)
        #expect(try await pg.replay() == 240 + 192)
        // Then still no read was made that the load step had not named
        #expect(storage.unloadedReads.value == unloaded)
        // And LMDB, given the log in PostgreSQL's order with its hashes (every `prev` and
        // `hash` checked), reaches the same head, views and tree
        _ = try await lmdb.append(try inputs(try pg.exportText()))
        #expect(try await lmdb.head() == head)
        let everyone = users + (0..<64).map { "writer-\($0)" }
        #expect(try await Self.views(pg, everyone) == Self.views(lmdb, everyone))
        #expect(try await pg.treeHead().root == lmdb.treeHead().root)
        #expect(try await pg.verify() == head)
        // When the user index is brought up to the head on both, in two steps (the second
        // over pages the first wrote)
        let firstPG = try await pg.updateUserIndex(), firstLMDB = try await lmdb.updateUserIndex()
        #expect(firstPG != nil && firstPG == firstLMDB && firstPG?.size == head.seq)
        _ = try await pg.append(try inputs(lines[240...].joined(separator: "\n")))
        _ = try await lmdb.append(try inputs(lines[240...].joined(separator: "\n")))
        let second = try await pg.updateUserIndex(), secondLMDB = try await lmdb.updateUserIndex()
        // Then PostgreSQL's entries are LMDB's, and its update and verify read nothing their
        // load steps had not named
        #expect(second != nil && second == secondLMDB && second?.size == head.seq + 16)
        #expect(try await pg.verify() == pg.head())
        #expect(storage.unloadedReads.value == unloaded)
    }

    @Test func aCommandsGroupLoadsItsUserFirstAndRunsOnce() async throws {
        // Given a PostgreSQL ledger with alice's and bob's history
        let pg = try await StorageKind.postgres.freshLedger()
        let storage = try #require(pg.storage as? PostgresStorage)
        _ = try await pg.importText(PersonalDataTests.history)
        let unloaded = storage.unloadedReads.value
        // When carol, whom the writer has never read, registers a device and renames it (commands)
        let at = t("2026-03-02T00:00:00Z")
        _ = try await pg.perform(.register(user: "carol", deviceId: "phone", name: "Phone", kind: "mobile"), clock: { at })
        _ = try await pg.perform(.rename(user: "carol", deviceId: "phone", name: "Carol's phone"), clock: { at })
        // And a challenge is issued to her (its new id's record is loaded with the group: the
        // id is drawn before the group runs), approved, and an OTP sent and verified
        let c = try await pg.perform(.issueChallenge(user: "carol", requestingDeviceId: "laptop", action: "login", context: nil),
                                     clock: { at })
        let challenge = try #require(c.challengeId)
        _ = try await pg.perform(.approve(user: "carol", challengeId: challenge, deviceId: "phone", userVerified: true), clock: { at })
        let otp = try await pg.perform(try .sendOTP(user: "carol", channel: "sms", target: "+15551234567"), clock: { at })
        let verified = try await pg.perform(.verifyOTP(user: "carol", otpId: try #require(otp.otpId), code: try #require(otp.code)),
                                            clock: { at })
        #expect(verified.grantId != nil)
        // And a durable subscription is made and acknowledged (its meta value loaded with the group)
        _ = try await pg.putSubscription(name: "carol-feed", filter: .all)
        #expect(try await pg.acknowledge(subscription: "carol-feed", through: 2).checkpoint == 2)
        // Then each group loaded carol's state, the records its events name and the
        // subscription's value with its other reads (one step) and ran once: nothing was read that was not loaded, no thread waited
        #expect(storage.unloadedReads.value == unloaded)
        #expect(try await pg.state(of: "carol", asOf: .max).state.devices["phone"]?.name == "Carol's phone")
    }

    @Test func anAsyncWriteWithASavepointInsideARequestsIsDoneOnceWithoutWaiting() async throws {
        // Given a PostgreSQL ledger
        let pg = try await StorageKind.postgres.freshLedger()
        let storage = try #require(pg.storage as? PostgresStorage)
        _ = try await pg.importText(PersonalDataTests.history)
        // When an async write stores a value, then opens a savepoint inside a request's (a
        // real one, sent with the group's statements)
        let value = try await storage.writeAsync { w in
            try w.putMetaValue("async-write-test", [7])
            return try w.savepoint { try w.savepoint { try w.putMetaValue("async-nested", [8]); return 5 } }
        }
        // Then no thread waited, and its work was done once
        #expect(value == 5)
        #expect(try await pg.metaRecord("async-write-test") == [7])
        #expect(try await pg.metaRecord("async-nested") == [8])
    }

    @Test func anAsyncErasureOnPostgreSQLNeverWaitsOnAThreadAndLeavesWhatLMDBLeaves() async throws {
        // Given alice's personal values (a device's names and tokens, a challenge's context,
        // an OTP's target) and bob's, on PostgreSQL and on LMDB
        let lmdb = try await StorageKind.lmdb.freshLedger()
        let pg = try await StorageKind.postgres.freshLedger()
        let storage = try #require(pg.storage as? PostgresStorage)
        for ledger in [lmdb, pg] { _ = try await ledger.importText(PersonalDataTests.history) }
        let hashesBefore = try await PersonalDataTests.exportLines(pg).map { $0["hash"] }
        let unloaded = storage.unloadedReads.value
        // When alice is erased through the async form, on both
        var outcomes: [ErasureOutcome] = []
        for ledger in [lmdb, pg] {
            outcomes.append(try await ledger.erase("alice", reason: "request 12", actor: "admin:dpo", now: t("2026-03-02T00:00:00Z")))
        }
        // Then on PostgreSQL no thread waited (the erasure, its VACUUM FULL and the flag's
        // clearing were awaited), and the erasure's write read only what it loaded (alice's
        // state, personal values, events and records) before it ran
        #expect(storage.unloadedReads.value == unloaded)
        // And it erased what LMDB's erased, at the same place
        #expect(outcomes[1].erasedEvents == 5 && outcomes[0].erasedEvents == 5)
        #expect(outcomes[1].head.seq == 8 && outcomes[0].head.seq == 8)
        // And alice's values are gone from every table, bob's are there, the purge's flag is cleared
        let tables = storage.tables
        for v in PersonalDataTests.aliceValues {
            let literal = v.replacingOccurrences(of: "'", with: "''")
            for table in [tables.personal, tables.records, tables.states, tables.events] {
                let found = try await storage.integers("SELECT count(*) FROM \(table) WHERE position(convert_to('\(literal)', 'UTF8') in bytes) > 0")
                #expect(found == [0], "\(v) in \(table)")
            }
        }
        #expect(try await storage.integers("SELECT count(*) FROM \(tables.personal) WHERE owner = convert_to('alice', 'UTF8')") == [0])
        #expect(try await storage.integers("SELECT count(*) FROM \(tables.personal) WHERE owner = convert_to('bob', 'UTF8')") == [1])
        #expect(try await pg.metaRecord(Ledger.purgePendingKey) == nil)
        // And the hashes did not change, the log verifies, and an LMDB store given the export
        // (every `prev` and `hash` checked) answers as PostgreSQL and as the LMDB erased in place
        let lines = try await PersonalDataTests.exportLines(pg)
        #expect(Array(lines.prefix(hashesBefore.count).map { $0["hash"] }) == hashesBefore)
        #expect(try await pg.verify() == outcomes[1].head)
        let copy = try await StorageKind.lmdb.freshLedger()
        #expect(try await copy.append(try inputs(try pg.exportText())).head == outcomes[1].head)
        let q = QueryOptions(asOf: t("2026-03-02T00:00:00Z"))
        for other in [copy, lmdb] {
            #expect(try await Self.views(pg, ["alice", "bob"]) == Self.views(other, ["alice", "bob"]))
            #expect(try await pg.challenge("c1", of: "alice", q).json == other.challenge("c1", of: "alice", q).json)
        }
        #expect(try await pg.history("alice", q).map(\.event.personal?.hasErased) == lmdb.history("alice", q).map(\.event.personal?.hasErased))
    }

    @Test func theSweepersExpiryOnPostgreSQLNeverWaitsOnAThread() async throws {
        // Given a PostgreSQL ledger with one unresolved challenge (alice's c1, due at 09:11)
        let pg = try await StorageKind.postgres.freshLedger()
        let storage = try #require(pg.storage as? PostgresStorage)
        _ = try await pg.importText(PersonalDataTests.history)
        let unloaded = storage.unloadedReads.value
        // When the due challenges are expired through the async form, before and after it is due
        #expect(try await pg.expireDueChallenges(now: t("2026-03-01T09:10:00Z")).isEmpty)
        let expired = try await pg.expireDueChallenges(now: t("2026-03-02T00:00:00Z"))
        // Then c1 was expired, once, and the expiry's groups read nothing they had not loaded
        #expect(expired.map(\.event.type) == [.challengeExpired])
        #expect(storage.unloadedReads.value == unloaded)
        #expect(try await pg.expireDueChallenges(now: t("2026-03-02T00:00:00Z")).isEmpty)
    }

    @Test func openingAPostgreSQLStoreNeverWaitsOnAThreadWhateverItUpgrades() async throws {
        // Given a store of 4 users' events whose tree is gone
        let store = StorageKind.postgres.freshStore()
        let keys = StorageKind.postgres.keyDirectory(for: store)
        let users = (0..<4).map { "user-\($0)" }
        let (root, views): (Hash32, [JSON])
        do {
            let ledger = try await StorageKind.postgres.open(store, keys: keys)
            _ = try await ledger.append(try inputs(HashPipelineTests.events(users: 4, each: 5).joined(separator: "\n")))
            (root, views) = (try await ledger.treeHead().root, try await Self.views(ledger, users))
            try await ledger.write { w in try w.clearTree() }
            await ledger.close()
        }
        // When it is opened (the tree built again)
        let first = try await PostgresStorage(url: store)
        let rebuilt = try await Ledger(storage: first, configuration: .init(keyDirectory: keys))
        // Then no thread waited for PostgreSQL, and the tree is the log's
        #expect(try await rebuilt.treeHead().root == root)
        // Given its states as a release before stream hashes left them, and an erasure's purge pending
        try await rebuilt.write(states: users) { w in
            for u in users {
                let bytes = try #require(try w.projectionState(u))
                try w.putProjectionState(u, StateCodec.encode(try bytes.withUnsafeBytes { try StateCodec.decode($0, user: u) }))
            }
            try w.putMetaValue(Ledger.projectionLayoutKey, Ledger.layoutWithoutStreamHashes)
            try w.putMetaValue(Ledger.purgePendingKey, [1])
        }
        await rebuilt.close()
        // When it is opened again (the stream hashes computed, the purge finished)
        let second = try await PostgresStorage(url: store)
        let upgraded = try await Ledger(storage: second, configuration: .init(keyDirectory: keys))
        // Then no thread waited either, and the store is whole
        for u in users { #expect(try await upgraded.streamHead(of: u).head != nil) }
        #expect(try await Self.views(upgraded, users) == views)
        #expect(try await upgraded.read(ReadLoad(meta: [Ledger.purgePendingKey, Ledger.projectionLayoutKey])) { r in
            try r.metaValue(Ledger.purgePendingKey) == nil && r.metaValue(Ledger.projectionLayoutKey) == Ledger.projectionLayout
        })
        try await upgraded.verify()
        await upgraded.close()
    }
}
