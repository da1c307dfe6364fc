@testable import AuthLedger
@testable import AuthLedgerCore
import Foundation
import AuthLedgerTestSupport
import AuthLedgerPostgres
import Testing

/// What only the PostgreSQL backend has: moving a store onto it with the CLI, several
/// ledgers (servers) writing to one database, the versioned schema, URLs and secrets.
/// The rest of its behaviour is the conformance suites' (`StorageKind`).
@Suite(.enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set (tools/test sets it)"))
struct PostgresStorageTests {
    @Test func exportPipedIntoImportOnPostgreSQLReproducesEveryHash() throws {
        // Given an LMDB store with every recorded scenario
        let lmdb = Support.tempDir("authledger-move") + "/store"
        for name in ScenarioFixtureTests.scenarios {
            let r = try CLI.run(["import", Support.fixture("scenarios/\(name).jsonl").path, "--store", lmdb])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let export = try CLI.run(["export", "--store", lmdb])
        #expect(export.status == 0 && !export.stdout.isEmpty)
        // When it is exported and piped into `import -` on a PostgreSQL store
        let pg = StorageKind.postgres.freshStore()
        let pipe = try CLI.exec("/bin/sh", ["-c", "\"$AL\" export --store \"$SRC\" | \"$AL\" --store \"$DST\" import -"],
                                env: ["AL": Support.binary, "SRC": lmdb, "DST": pg])
        #expect(pipe.status == 0, "\(pipe.stderr)")
        // Then the PostgreSQL store exports the same bytes (every seq, prev and hash), and verifies
        let again = try CLI.run(["export", "--store", pg])
        #expect(again.status == 0)
        #expect(again.stdout == export.stdout)
        let verify = try CLI.run(["verify", "--store", pg])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(try CLI.run(["verify", "--store", lmdb]).stdout == verify.stdout)
        // And the password of the URL appears in no output
        let password = try #require(try PostgresLocation(url: pg).password)
        for r in [pipe, again, verify] { #expect(!r.stderr.contains(password) && !r.stdout.contains(password)) }
    }

    @Test func twoLedgersOnOneDatabaseAppendGapFreeInOneOrder() async throws {
        // Given two ledgers (two servers) on the same PostgreSQL store
        let (_, a, b) = try await Self.twoLedgers()
        for (ledger, user) in [(a, "alice"), (b, "bob")] {
            _ = try await ledger.perform(.register(user: user, deviceId: "phone", name: "Phone", kind: "mobile", platform: nil,
                                                   appId: nil, pushToken: nil, binding: "permanent", via: nil, grantId: nil, challengeId: nil),
                                         clock: { t("2026-05-01T10:00:00Z") })
        }
        // When both append concurrently to both users (each writer's cached state goes stale at every turn)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<40 {
                let ledger = k % 2 == 0 ? a : b
                let user = k % 4 < 2 ? "alice" : "bob"
                group.addTask {
                    // The clock is read inside the transaction, after the head lock: in commit order.
                    _ = try await ledger.perform(.access(user: user, deviceId: "phone"))
                }
            }
            try await group.waitForAll()
        }
        // Then the log is 42 events with seq 1…42 and no gap, both see the same head, and it verifies
        let events = try await a.events()
        #expect(events.map(\.seq) == Array(1...42))
        #expect(try await a.head() == b.head())
        #expect(try await b.verify().seq == 42)
        // And every stream's versions are 1…n in seq order
        for user in ["alice", "bob"] {
            #expect(events.filter { $0.event.user == user }.map(\.version) == Array(1...21))
        }
    }

    @Test func aLedgerSeesAnotherServersAppendBeforeItsNextCommand() async throws {
        // Given two ledgers on one store, and a device registered through the second, used through the first
        let (_, a, b) = try await Self.twoLedgers()
        let at = t("2026-05-01T10:00:00Z")
        _ = try await b.perform(.register(user: "alice", deviceId: "phone", name: "Phone", kind: "mobile"),
                                clock: { at })
        _ = try await a.perform(.access(user: "alice", deviceId: "phone"), clock: { at.adding(seconds: 1) })
        // When the second revokes it and the first (whose writer cached the device) reports an access
        _ = try await b.perform(.revoke(user: "alice", deviceId: "phone", reason: "lost"), clock: { at.adding(seconds: 3600) })
        let refused = await #expect(throws: LedgerError.self) {
            _ = try await a.perform(.access(user: "alice", deviceId: "phone"), clock: { at.adding(seconds: 3601) })
        }
        // Then the first refuses it from the revocation it did not make itself
        #expect(refused?.code == .deviceRevoked)
        #expect(try await a.head().seq == 3)
        #expect(try await a.verify().seq == 3)
    }

    /// Two ledgers on one fresh PostgreSQL store, and a task reading the first event of a
    /// feed on the second ledger that polls only once an hour (so only a commit
    /// notification can wake it in time). Returns the store, the first ledger and the task.
    /// Two ledgers (two servers) on one fresh PostgreSQL store, sharing its key files.
    static func twoLedgers() async throws -> (store: String, Ledger, Ledger) {
        let store = StorageKind.postgres.freshStore()
        let keys = Support.tempDir()
        return (store, try await StorageKind.postgres.open(store, keys: keys), try await StorageKind.postgres.open(store, keys: keys))
    }

    static func twoLedgersAndAnHourlyFeed() async throws -> (String, Ledger, Task<UInt64?, Error>) {
        let (store, a, b) = try await Self.twoLedgers()
        let feed = try await b.events(from: nil, filter: .all, pollInterval: .seconds(3600))
        let first = Task { () -> UInt64? in
            for try await e in feed { return e.seq }
            return nil
        }
        return (store, a, first)
    }

    /// The seq the feed task delivers, with a 60 s guard (the feed's own poll would take an hour).
    static func firstSeq(_ first: Task<UInt64?, Error>) async throws -> UInt64? {
        let guardTask = Task { try await Task.sleep(for: .seconds(60)); first.cancel() }
        defer { guardTask.cancel() }
        return try await first.value
    }

    @Test func anotherServersCommitWakesTheFeedWithoutWaitingForItsPoll() async throws {
        // Given two ledgers on one store, and a feed on the second that polls only once an hour
        let (_, a, first) = try await Self.twoLedgersAndAnHourlyFeed()
        // When the first ledger appends (after the feed went to sleep)
        try await Task.sleep(for: .milliseconds(300))
        try await a.importText(LedgerTests.phone)
        // Then the feed delivers it, woken by the notification (a 60 s guard: the poll would take an hour)
        #expect(try await Self.firstSeq(first) == 1)
    }

    @Test func theListeningConnectionReconnectsAfterItIsTerminated() async throws {
        // Given two ledgers on one store, and a feed on the second that polls only once an hour
        let (store, a, first) = try await Self.twoLedgersAndAnHourlyFeed()
        // When an administrator terminates the second ledger's listening connection
        let schema = String(store[store.range(of: "schema=")!.upperBound...])
        let admin = try await PostgresStorage(url: store)
        var terminated: [Int64] = [], polls = 0
        while terminated.first ?? 0 == 0, polls < 600 {
            if polls > 0 { try await Task.sleep(for: .milliseconds(100)) }
            terminated = try await admin.integers("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE pid <> pg_backend_pid() AND query ILIKE 'LISTEN%\(schema)%'
                """)
            polls += 1
        }
        #expect((terminated.first ?? 0) >= 1, "no listening connection to terminate")
        // And the first ledger appends
        try await a.importText(LedgerTests.phone)
        // Then the feed still delivers it without waiting for its poll: the listener
        // reconnected (a 60 s guard: the poll would take an hour)
        #expect(try await Self.firstSeq(first) == 1)
    }

    @Test func twoServersSweepingTheSameDueChallengeExpireItOnce() async throws {
        // Given a challenge past its expiry, and two ledgers (servers) on the store
        let (_, a, b) = try await Self.twoLedgers()
        let at = t("2026-05-01T10:00:00Z")
        _ = try await a.perform(.register(user: "alice", deviceId: "phone", name: "Phone", kind: "mobile"),
                                clock: { at })
        _ = try await a.perform(.issueChallenge(user: "alice", requestingDeviceId: "laptop", action: "login", context: nil),
                                clock: { at.adding(seconds: 60) })
        // When both sweep at once, several times
        let later = at.adding(seconds: 3600)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<6 {
                let ledger = k % 2 == 0 ? a : b
                group.addTask { _ = try await ledger.expireDueChallenges(now: later) }
            }
            try await group.waitForAll()
        }
        // Then the challenge expired exactly once
        #expect(try await a.events(types: [.challengeExpired]).count == 1)
        #expect(try await b.verify().seq == 3)
    }

    @Test func theSchemaIsVersionedAndANewerOneIsRefused() async throws {
        // Given a store opened once (schema created)
        let store = StorageKind.postgres.freshStore()
        let schema = try PostgresLocation(url: store).schema
        let ledger = try await StorageKind.postgres.open(store)
        try await ledger.importText(LedgerTests.phone)
        // When it is opened again, then nothing is migrated twice and the log is there
        #expect(try await StorageKind.postgres.open(store).head().seq == 1)
        let storage = try await PostgresStorage(url: store)
        let versions = try await storage.integers("SELECT version FROM \(schema).schema_version")
        #expect(versions == [Int64(PostgresSchema.latest)])
        // When the schema says a later version than this build knows
        _ = try await storage.integers("UPDATE \(schema).schema_version SET version = version + 1")
        // Then opening it is refused with a clear storage error
        let e = await refusal { _ = try await StorageKind.postgres.open(store) }
        #expect(e?.code == .storageError)
        #expect(e?.message.contains("newer") == true)
    }

    @Test func noErrorShowsThePasswordOfTheURL() async throws {
        let url = try #require(StorageKind.postgresURL)
        var location = try PostgresLocation(url: url)
        let password = try #require(location.password)
        // A wrong password, and a port where nothing listens
        location.password = "wrong-" + password
        let wrong = url.replacingOccurrences(of: ":\(password)@", with: ":\(location.password!)@")
        let closed = url.replacingOccurrences(of: ":\(location.port)/", with: ":1/")
        for bad in [wrong, closed] {
            let e = await refusal { _ = try await PostgresStorage(url: bad) }
            #expect(e?.code == .storageError)
            #expect(e.map { !$0.message.contains(password) } == true, "\(e?.message ?? "")")
            let r = try CLI.run(["verify", "--store", bad])
            #expect(r.status != 0)
            #expect(!r.stderr.contains(password) && !r.stdout.contains(password))
        }
        // And the store's name in messages has no password
        #expect(!PostgresLocation.displayName(url).contains(password))
        #expect(PostgresLocation.displayName(url).contains(":***@"))
    }

    @Test(arguments: ["postgresql://", "postgresql://host/db", "postgresql://u:secret@h/db?schema=Robert%27);DROP",
                      "postgresql://u:secret@h/db?sslmode=maybe", "postgresql://u:secret@h:99999/db", "postgresql://u:secret@h/db?x=1"])
    func aMalformedURLIsAClearErrorWithoutItsPassword(_ url: String) {
        let e = refusal { _ = try PostgresLocation(url: url) }
        #expect(e?.code == .configurationError)
        #expect(e.map { !$0.message.contains("secret") && $0.message.hasPrefix("invalid PostgreSQL store URL") } == true)
    }
}

/// Parsing a store URL (no database needed).
struct PostgresLocationTests {
    @Test func percentEncodedPartsAreDecodedOnce() throws {
        // `%25` is an encoded `%`: `%2541` stands for the three characters `%41`, not for `A`
        let location = try PostgresLocation(url: "postgresql://us%2541er:pa%2541ss%40word@db.example:6543/da%2541ta%20base")
        #expect(location.user == "us%41er")
        #expect(location.password == "pa%41ss@word")
        #expect(location.database == "da%41ta base")
        #expect(location.host == "db.example" && location.port == 6543)
        // A database left out is the user's name, decoded once as well
        #expect(try PostgresLocation(url: "postgresql://us%2541er@db.example").database == "us%41er")
    }
}
