@testable import AuthLedger
@testable import AuthLedgerCore
import Foundation
import AuthLedgerTestSupport
import AuthLedgerPostgres
import Testing

/// The PostgreSQL writer's group path (#25): one `append_group` statement per group
/// (schema version 2, migrated onto existing stores), reads by the group, and the Merkle
/// tree's frontier kept between groups unless another server moved the head.
@Suite(.enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set (tools/test sets it)"))
struct PostgresGroupTests {
    /// A first device for each of `users`, as one request's inputs.
    static func registrations(_ users: Range<Int>, prefix: String = "u") -> [EventInput] {
        users.map { k in
            var d = EventData()
            d[.deviceId] = .string("phone"); d[.name] = .string("Phone \(k)"); d[.kind] = .string("mobile")
            d[.binding] = .string("permanent"); d[.via] = .string("initial")
            return EventInput(event: Event(type: .registered, user: "\(prefix)\(k)", at: t("2026-05-01T10:00:00Z"), data: d))
        }
    }

    /// Turns the store of `schema` back into schema version 2 (the Merkle hashes one row
    /// each in `tree`, `append_group` writing them there), its hashes cut from the tiles here.
    static func downgradeToVersion2(_ admin: PostgresStorage, _ schema: String) async throws {
        _ = try await admin.integers("CREATE TABLE \(schema).tree (idx bigint PRIMARY KEY, hash bytea NOT NULL)")
        _ = try await admin.integers("""
            INSERT INTO \(schema).tree (idx, hash) SELECT t.tile * \(PostgresTiles.width) + k, substring(t.hashes FROM (k * 32 + 1)::int FOR 32)
            FROM \(schema).tiles t, generate_series(0, length(t.hashes) / 32 - 1) AS k
            """)
        _ = try await admin.integers("DROP TABLE \(schema).tiles")
        _ = try await admin.integers("DROP FUNCTION \(schema).append_group")
        _ = try await admin.integers(PostgresSchema.migrations[1][0].replacingOccurrences(of: "{S}.", with: "\(schema)."))
        _ = try await admin.integers("UPDATE \(schema).schema_version SET version = 2")
    }


    @Test func aVersion1StoreIsMigratedToTheGroupFunctionAndKeepsItsLog() async throws {
        // Given a store whose schema is at version 1 (no append_group function, hashes in `tree`)
        let store = StorageKind.postgres.freshStore()
        let schema = try PostgresLocation(url: store).schema
        try await StorageKind.postgres.open(store).importText(LedgerTests.phone)
        let admin = try await PostgresStorage(url: store)
        try await Self.downgradeToVersion2(admin, schema)
        _ = try await admin.integers("DROP FUNCTION \(schema).append_group")
        _ = try await admin.integers("UPDATE \(schema).schema_version SET version = 1")
        // When it is opened again
        let ledger = try await StorageKind.postgres.open(store)
        // Then it is at the latest version, with the function, and appends through it
        #expect(try await admin.integers("SELECT version FROM \(schema).schema_version") == [Int64(PostgresSchema.latest)])
        #expect(PostgresSchema.latest >= 2)
        #expect(try await admin.integers("""
            SELECT count(*) FROM pg_proc WHERE proname = 'append_group' AND pronamespace = '\(schema)'::regnamespace
            """) == [1])
        _ = try await ledger.append(Self.registrations(0..<3))
        #expect(try await ledger.head().seq == 4)
        #expect(try await ledger.verify().seq == 4)
    }

    @Test func aVersion2StoreIsMigratedToTilesWithEveryHashUnchanged() async throws {
        // Given a store written in schema version 2: 700 events appended in groups of 1 to
        // 97 (so tiles end inside groups), their 1,400-odd Merkle hashes one row each in `tree`
        let store = StorageKind.postgres.freshStore()
        let schema = try PostgresLocation(url: store).schema
        let lmdb = try await StorageKind.lmdb.freshLedger()
        var next = 0
        do {
            let ledger = try await StorageKind.postgres.open(store)
            for size in [1, 97, 3, 60, 250, 1, 2, 186, 100] {
                _ = try await ledger.append(Self.registrations(next..<(next + size)))
                next += size
            }
            _ = try await lmdb.importText(try ledger.exportText())
        }
        let n = UInt64(next)
        let admin = try await PostgresStorage(url: store)
        try await Self.downgradeToVersion2(admin, schema)
        #expect(try await admin.integers("SELECT count(*) FROM \(schema).tree") == [Int64(MerkleTree.storedHashCount(n))])
        // When it is opened by this version
        let ledger = try await StorageKind.postgres.open(store)
        // Then it is at version 3: `tiles` holds the hashes 128 to a row, `tree` is gone
        #expect(try await admin.integers("SELECT version FROM \(schema).schema_version") == [3])
        #expect(try await admin.integers("SELECT count(*) FROM pg_tables WHERE schemaname = '\(schema)' AND tablename = 'tree'") == [0])
        #expect(PostgresTiles.width == 128)
        let tiles = (MerkleTree.storedHashCount(n) + 127) / 128
        #expect(try await admin.integers("SELECT count(*) FROM \(schema).tiles") == [Int64(tiles)])
        // And every hash is LMDB's, at the same index; proofs and roots are LMDB's; the log verifies
        let hashes = try await ledger.storedHashes()
        #expect(hashes.count == Int(MerkleTree.storedHashCount(n)))
        #expect(try await hashes == lmdb.storedHashes())
        for (seq, size) in [(1, n), (127, n), (256, 300), (n, n)] as [(UInt64, UInt64)] {
            #expect(try await ledger.inclusionProof(seq: seq, size: size) == lmdb.inclusionProof(seq: seq, size: size))
        }
        #expect(try await ledger.consistencyProof(from: 129, to: n) == lmdb.consistencyProof(from: 129, to: n))
        #expect(try await ledger.verify().seq == n)
        // And the whole tree is read in two loads (its size, then its tiles): hash by hash
        // from tiles of 128, not a round trip each
        let storage = try #require(ledger.storage as? PostgresStorage)
        let loads = storage.queryLoads.value
        #expect(try await ledger.storedHashes() == hashes)
        #expect(storage.queryLoads.value - loads == 2)
        // And appends go on in tiles, as LMDB's do
        _ = try await ledger.append(Self.registrations(next..<(next + 300)))
        let copy = try await StorageKind.lmdb.freshLedger()
        _ = try await copy.importText(try ledger.exportText())
        #expect(try await ledger.verify().seq == n + 300)
        #expect(try await ledger.storedHashes() == copy.storedHashes())
        #expect(try await ledger.treeHead() == copy.treeHead())
        #expect(try await admin.integers("SELECT count(*) FROM \(schema).tiles") == [Int64((MerkleTree.storedHashCount(n + 300) + 127) / 128)])
    }

    @Test func aVersion2StoreWithAGapInItsTreeIsNotMigrated() async throws {
        // Given a version 2 store of five events one of whose Merkle hashes was deleted
        let store = StorageKind.postgres.freshStore()
        let schema = try PostgresLocation(url: store).schema
        _ = try await StorageKind.postgres.open(store).append(Self.registrations(0..<5))
        let admin = try await PostgresStorage(url: store)
        try await Self.downgradeToVersion2(admin, schema)
        _ = try await admin.integers("DELETE FROM \(schema).tree WHERE idx = 1")
        #expect(try await admin.integers("SELECT count(*) FROM \(schema).tree") == [Int64(MerkleTree.storedHashCount(5) - 1)])
        // When it is opened by this version, then it is refused, and the store stays at version 2, untouched
        await #expect(refusal { _ = try await StorageKind.postgres.open(store) }?.code == .storageError)
        #expect(try await admin.integers("SELECT version FROM \(schema).schema_version") == [2])
        #expect(try await admin.integers("SELECT count(*) FROM pg_tables WHERE schemaname = '\(schema)' AND tablename = 'tiles'") == [0])
    }

    @Test func theFrontierKeptBetweenGroupsIsReadAgainWhenAnotherServerAppended() async throws {
        // Given two ledgers (servers) on one store
        let (_, a, b) = try await PostgresStorageTests.twoLedgers()
        // When they take turns, each appending groups of 7 (the frontier changes shape every
        // time), a ledger appending twice in a row (its kept frontier is current) and after
        // the other (its kept frontier is stale)
        var next = 0
        for ledger in [a, a, b, a, b, b, a] {
            _ = try await ledger.append(Self.registrations(next..<(next + 7)))
            next += 7
        }
        // And both append at once
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<16 {
                let ledger = k % 2 == 0 ? a : b, first = next + 3 * k
                group.addTask { _ = try await ledger.append(Self.registrations(first..<(first + 3))) }
            }
            try await group.waitForAll()
        }
        // Then the stored Merkle tree is the log's (verify recomputes it) on both, and holds
        // exactly the hashes of a tree of that size
        let n = UInt64(next + 48)
        #expect(try await a.verify().seq == n)
        #expect(try await b.verify().seq == n)
        #expect(try await a.read(.treeHashCount) { try $0.treeHashCount() } == MerkleTree.storedHashCount(n))
        // And an LMDB store fed the same export has the same root and head, and the same stored tree
        let lmdb = try await StorageKind.lmdb.freshLedger()
        _ = try await lmdb.importText(try a.exportText())
        #expect(try await lmdb.head() == a.head())
        #expect(try lmdb.inPlace.read { r in try Ledger.storedTreeMatchesLog(r, through: n) })
        #expect(try await a.storedHashes() == lmdb.storedHashes())
    }

    @Test func aWriterDropsOnlyTheStatesOfTheStreamsAnotherServerAppendedTo() async throws {
        // Given two ledgers (servers) on one store, each with alice and bob registered
        let (_, a, b) = try await PostgresStorageTests.twoLedgers()
        let at = t("2026-05-01T10:00:00Z")
        for user in ["alice", "bob", "carol"] {
            _ = try await a.perform(.register(user: user, deviceId: "phone", name: "Phone", kind: "mobile"), clock: { at })
        }
        // When they take turns appending to alice, bob and carol (each writer's cache
        // holds all three, and the other server has just appended to some of them)
        for k in 1...12 {
            let ledger = k % 2 == 0 ? a : b
            let user = ["alice", "bob", "carol"][k % 3]
            _ = try await ledger.perform(.access(user: user, deviceId: "phone"), clock: { at.adding(seconds: Int64(k)) })
        }
        // Then no write was refused: a state cached from before the other server's append
        // would have taken a version that server's event holds (the stream-version index
        // refuses it, and the group's requests run again one per transaction)
        for ledger in [a, b] {
            let storage = try #require(ledger.storage as? PostgresStorage)
            #expect(storage.refusedGroups.value == 0)
        }
        #expect(try await a.verify().seq == 15)
        // And each stream's versions follow one another in seq order
        for user in ["alice", "bob", "carol"] {
            #expect(try await a.events().filter { $0.event.user == user }.map(\.version) == Array(1...5))
        }
    }

    @Test(arguments: [1, 3_000])
    func aRecordReadAheadAsAbsentIsSeenOnceAnEarlierRequestOfTheGroupWroteIt(_ others: Int) async throws {
        // Given a user with a device
        let ledger = try await StorageKind.postgres.freshLedger()
        let at = t("2026-05-01T10:00:00Z")
        _ = try await ledger.perform(.register(user: "alice", deviceId: "phone", name: "Phone", kind: "mobile"), clock: { at })
        // When one request issues and approves a challenge for a laptop (the approved challenge
        // leaves the user's state: only its record keeps it), with `others` registrations
        // (3,000 make the group's writes go to PostgreSQL before the next request), and the
        // next request of the same group registers the laptop with that challenge — the
        // group read the challenge's record ahead, absent then
        var issue = EventData()
        issue[.challengeId] = .string("c1"); issue[.action] = .string("login"); issue[.requestingDeviceId] = .string("laptop")
        issue[.expiresAt] = .time(at.adding(seconds: 600))
        var approve = EventData()
        approve[.challengeId] = .string("c1"); approve[.approverDeviceId] = .string("phone")
        var register = EventData()
        register[.deviceId] = .string("laptop"); register[.name] = .string("Laptop"); register[.kind] = .string("desktop")
        register[.binding] = .string("permanent"); register[.via] = .string("trusted_device"); register[.challengeId] = .string("c1")
        let first = AppendRequest([
            EventInput(event: Event(type: .challengeIssued, user: "alice", at: at.adding(seconds: 10), data: issue)),
            EventInput(event: Event(type: .challengeApproved, user: "alice", at: at.adding(seconds: 20), data: approve)),
        ] + Self.registrations(0..<others))
        let second = AppendRequest([EventInput(event: Event(type: .registered, user: "alice", at: at.adding(seconds: 30), data: register))])
        let results = await Self.inOneGroup(ledger, [first, second])
        // Then both pass: the registration found the approved challenge the group wrote, not
        // the absence read ahead
        #expect(throws: Never.self) { try results[0].get() }
        #expect(throws: Never.self) { try results[1].get() }
        #expect(try await ledger.head().seq == UInt64(4 + others))
        #expect(try await ledger.verify().seq == UInt64(4 + others))
    }
}

extension PostgresGroupTests {
    @Test func everyKindOfWriteGroupReadsOnlyWhatItsLoadStepNamedInThreeRoundTripsAtMost() async throws {
        // Given a PostgreSQL ledger, and the round trips and refused unloaded reads of its write groups
        let pg = try await StorageKind.postgres.freshLedger()
        let storage = try #require(pg.storage as? PostgresStorage)
        var trips: [(String, Int, groups: Int)] = []
        func measured(_ name: String, groups: Int = 1, _ op: () async throws -> Void) async throws {
            let before = storage.groupRoundTrips.value
            try await op()
            trips.append((name, storage.groupRoundTrips.value - before, groups))
        }
        let at = t("2026-03-02T00:00:00Z")
        // When a history is imported, and appended again (duplicates: their events and values compared)
        try await measured("import") { _ = try await pg.importText(PersonalDataTests.history) }
        try await measured("duplicates") {
            let again = try await pg.append(try inputs(try pg.exportText()))
            #expect(again.duplicates == 7)
        }
        // And every kind of command runs (records named by their arguments and drawn ids)
        try await measured("register") { _ = try await pg.perform(.register(user: "carol", deviceId: "phone", name: "Phone", kind: "mobile"), clock: { at }) }
        try await measured("rename") { _ = try await pg.perform(.rename(user: "carol", deviceId: "phone", name: "Carol's"), clock: { at }) }
        try await measured("access") { _ = try await pg.perform(.access(user: "carol", deviceId: "phone"), clock: { at }) }
        try await measured("push token") { _ = try await pg.perform(.updatePushToken(user: "carol", deviceId: "phone", pushToken: "tok-1"), clock: { at }) }
        var challenge = ""
        try await measured("issue") {
            challenge = try #require(try await pg.perform(.issueChallenge(user: "carol", requestingDeviceId: "laptop", action: "login", context: nil),
                                                          clock: { at }).challengeId)
        }
        try await measured("approve") { _ = try await pg.perform(.approve(user: "carol", challengeId: challenge, deviceId: "phone", userVerified: true), clock: { at }) }
        try await measured("issue, deny") {
            let c = try #require(try await pg.perform(.issueChallenge(user: "carol", requestingDeviceId: "tablet", action: "login", context: nil),
                                                      clock: { at }).challengeId)
            _ = try await pg.perform(.deny(user: "carol", challengeId: c, deviceId: "phone"), clock: { at })
        }
        try await measured("otp") {
            let otp = try await pg.perform(try .sendOTP(user: "carol", channel: "sms", target: "+15551234567"), clock: { at })
            _ = try await pg.perform(.verifyOTP(user: "carol", otpId: try #require(otp.otpId), code: try #require(otp.code)), clock: { at })
        }
        try await measured("revoke") { _ = try await pg.perform(.revoke(user: "carol", deviceId: "phone", reason: nil), clock: { at.adding(seconds: 3600) }) }
        // And the sweeper expires alice's challenge, meta records and a subscription are changed
        try await measured("expiry") {
            let expired = try await pg.expireDueChallenges(now: at)
            #expect(expired.count == 1)
        }
        try await measured("meta records") {
            let old = try await pg.updateMetaRecords(reading: ["feature/a"]) { get, put in
                let old = try get("feature/a")
                try put("feature/a", [1])
                return old
            }
            let new = try await pg.updateMetaRecords(reading: ["feature/a"]) { get, _ in try get("feature/a") }
            #expect(old == nil && new == [1])
        }
        try await measured("subscription") {
            _ = try await pg.putSubscription(name: "feed", filter: .all)
            #expect(try await pg.acknowledge(subscription: "feed", through: 2).checkpoint == 2)
        }
        // And alice is erased (the erasure, then its flag's clearing), and the log with her
        // `user.erased` imported into another store
        try await measured("erasure") {
            let erased = try await pg.erase("alice", now: at)
            #expect(erased.erasedEvents == 5)
        }
        let copy = try await StorageKind.postgres.freshLedger()
        let copied = try #require(copy.storage as? PostgresStorage)
        #expect(try await copy.append(try inputs(try pg.exportText())).head == pg.head())
        // Then no group read anything its load step had not named
        #expect(storage.unloadedReads.value == 0)
        #expect(copied.unloadedReads.value == 0)
        // And each group cost three round trips at most: the head's lock, its reads, its writes with COMMIT
        let groups = ["issue, deny": 2, "otp": 2, "meta records": 2, "subscription": 2, "erasure": 2]
        for (name, n, _) in trips { #expect(n >= 2 && n <= 3 * (groups[name] ?? 1), "\(name): \(n) round trips") }
        #expect(try await pg.verify() == pg.head())
    }

    /// Appends `requests` in one commit group, in this order: the writer thread is held by a
    /// job until they are all queued behind it. Every wait is off the cooperative pool or
    /// yields it (tests run in parallel: a blocked pool thread would starve the tasks that queue).
    static func inOneGroup(_ ledger: Ledger, _ requests: [AppendRequest]) async -> [Result<AppendOutcome, any Error>] {
        let release = DispatchSemaphore(value: 0), blocked = DispatchSemaphore(value: 0)
        ledger.writer.submit({ _ in blocked.signal(); release.wait(); return 0 }, done: { _ in })
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { blocked.wait(); c.resume() }
        }
        var tasks: [Task<Result<AppendOutcome, any Error>, Never>] = []
        for (k, request) in requests.enumerated() {
            tasks.append(Task {
                do { return .success(try await ledger.append(request)) } catch { return .failure(error) }
            })
            while ledger.writer.queuedCount < k + 1 { try? await Task.sleep(for: .milliseconds(1)) }
        }
        release.signal()
        var out: [Result<AppendOutcome, any Error>] = []
        for t in tasks { out.append(await t.value) }
        return out
    }
}
