@testable import AuthLedger
@testable import AuthLedgerCore
import AuthLedgerPostgres
import AuthLedgerTestSupport
import Foundation
import Testing

/// The async reads on PostgreSQL (`PostgresStorage.readAsync`): they never wait on a thread
/// (the driver has no blocking wait left to make), each loads what it reads in at most
/// two round trips and runs once, they answer as LMDB, and a store that is closed is a
/// `storage_error`, not a crash or a hang.
@Suite(.enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set (tools/test sets it)"))
struct AsyncReadTests {
    /// Every answer a service reads, through the async forms, as one JSON document.
    static func answers(_ ledger: Ledger, _ expectations: [ScenarioFixtureTests.Expectation]) async throws -> [JSON] {
        var out: [JSON] = []
        for e in expectations {
            switch e.query {
            case "devices": out.append(try await ledger.devices(of: e.user, e.options).json)
            case "cooling": out.append(try await ledger.cooling(of: e.user, e.options).json)
            case "pending": out.append(try await ledger.pending(of: e.user, e.options).json)
            case "challenge": out.append(try await ledger.challenge(e.id!, of: e.user, e.options).json)
            default: out.append(.array(try await ledger.history(e.user, e.options).map(\.json)))
            }
            out.append(.array(try await ledger.history(e.user, e.options, page: HistoryPage(after: 2, limit: 3)).map(\.json)))
            let (state, position) = try await ledger.state(of: e.user, position: e.options.position, asOf: e.options.asOf, fromScratch: true)
            out.append(.array([.int(Int64(position)), .int(Int64(state.version))]))
        }
        let head = try await ledger.head()
        out.append(.string(hexString(head.hash.bytes)))
        out.append(.array(try await ledger.events(from: 2, limit: 5).map(\.json)))
        let (size, root) = try await ledger.treeHead()
        out.append(.array([.int(Int64(size)), .string(hexString(root.bytes))]))
        for seq in 1...size {
            let p = try await ledger.inclusionProof(seq: seq)
            out.append(.array(p.proof.map { .string(hexString($0.bytes)) } + [.string(hexString(p.leafHash.bytes)), .string(hexString(p.root.bytes))]))
        }
        let c = try await ledger.consistencyProof(from: 1, to: size)
        out.append(.array(c.proof.map { .string(hexString($0.bytes)) } + [.string(hexString(c.oldRoot.bytes)), .string(hexString(c.newRoot.bytes))]))
        out.append(.string(Data(try await ledger.hashTile(level: 0, index: 0, width: Int(size))).base64EncodedString()))
        out.append(.string(Data(try await ledger.entryBundle(index: 0, width: Int(size))).base64EncodedString()))
        out.append(.string(try await ledger.checkpoint(signer: CheckpointSigner(origin: "example.com/log", seed: Array(repeating: 7, count: 32)))))
        out.append(.string("\(try await ledger.policy())"))
        out.append(.int(Int64(try await ledger.unresolvedChallenges().challenges.count)))
        out.append(try await ledger.metaRecord("checkpoint").map { .string(Data($0).base64EncodedString()) } ?? .null)
        return out
    }

    /// The views' answers alone.
    static func viewAnswers(_ ledger: Ledger, _ expectations: [ScenarioFixtureTests.Expectation]) async throws -> [JSON] {
        try await expectations.asyncMap { try await ScenarioFixtureTests.answer(ledger, $0, fromScratch: false) }
    }

    @Test(arguments: ScenarioFixtureTests.scenarios)
    func asyncReadsOnPostgreSQLNeverWaitOnAThreadAndAnswerAsLMDB(_ name: String) async throws {
        // Given a scenario on LMDB and the same log on PostgreSQL
        let (events, expectations) = try ScenarioFixtureTests.load(name)
        let lmdb = try await StorageKind.lmdb.freshLedger()
        let pg = try await StorageKind.postgres.freshLedger()
        _ = try await lmdb.append(events)
        // (The export carries the disclosures' salts: both stores hold the same bytes.)
        _ = try await pg.append(try inputs(try lmdb.exportText()))
        let storage = try #require(pg.storage as? PostgresStorage)
        let (reads, loads) = (storage.queryReads.value, storage.queryLoads.value)
        // When a service's reads are made through the async forms
        let answers = try await Self.answers(pg, expectations)
        // Then each read loaded what it reads in one or two round trips, and the answers are LMDB's
        let n = storage.queryReads.value - reads
        #expect(n > expectations.count)
        #expect(storage.queryLoads.value - loads >= n)
        #expect(storage.queryLoads.value - loads <= 2 * n)
        #expect(answers == (try await Self.answers(lmdb, expectations)))
        // And the views are those read one by one
        let views = stride(from: 0, to: expectations.count * 3, by: 3).map { answers[$0] }
        #expect(views == (try await Self.viewAnswers(pg, expectations)))
    }

    @Test func aLongHistoryReadWholeAndInPagesIsLMDBsInOneRoundTripEach() async throws {
        // Given a user with 40 events (interleaved with another's) on PostgreSQL and on LMDB
        let lmdb = try await HistoryPageTests.ledger(40, .lmdb)
        let pg = try await StorageKind.postgres.freshLedger()
        _ = try await pg.append(try inputs(try lmdb.exportText()))
        let storage = try #require(pg.storage as? PostgresStorage)
        let o = QueryOptions(asOf: t("2026-04-01T00:00:00Z"))
        let loads = storage.queryLoads.value
        // When its history is read whole and in pages, and the log from the start
        let whole = try await pg.history("alice", o)
        let page = HistoryPage(after: 17, limit: 9)
        let small = (try await pg.history("alice", o, page: page), try await pg.events(from: 3, limit: 30), try await pg.devices(of: "alice", o))
        // Then each read loaded what it reads in one round trip, and each answer is LMDB's
        #expect(storage.queryLoads.value - loads == 4)
        #expect(whole.count == 40)
        #expect(whole.map(\.json) == (try await lmdb.history("alice", o)).map(\.json))
        #expect(small.0.map(\.json) == (try await lmdb.history("alice", o, page: page)).map(\.json))
        #expect(small.0.count == 9)
        #expect(small.1.map(\.json) == (try await lmdb.events(from: 3, limit: 30)).map(\.json))
        #expect(small.2.json == (try await lmdb.devices(of: "alice", o)).json)
    }

    @Test func aReadOfWhatItsQueryDidNotLoadIsAStorageErrorAndTheOtherReadsGoOn() async throws {
        // Given a PostgreSQL ledger with one event of alice's
        let pg = try await StorageKind.postgres.freshLedger()
        _ = try await pg.append(try inputs(line("device.registered", at: "2026-03-01T09:00:00Z",
            data: #"{"deviceId":"phone","name":"Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)))
        // When a read asks for a projection its load did not name, then it fails with
        // storage_error naming what it asked for (it neither waits nor runs again)
        do {
            _ = try await pg.read { r in try r.projectionState("alice") }
            Issue.record("a read of what was not loaded answered")
        } catch let e as LedgerError {
            #expect(e.code == .storageError)
            #expect(e.message.contains("the projection alice"))
        }
        // And the same read with it named answers, as do the next reads
        #expect(try await pg.read(ReadLoad(states: ["alice"])) { r in try r.projectionState("alice") } != nil)
        #expect(try await pg.devices(of: "alice", QueryOptions(asOf: .max)).devices.count == 1)
    }

    @Test func anAsyncReadOfAClosedStoreIsAStorageError() async throws {
        // Given a PostgreSQL ledger that was closed
        let pg = try await StorageKind.postgres.freshLedger()
        _ = try await pg.append(try inputs(line("device.registered", at: "2026-03-01T09:00:00Z",
            data: #"{"deviceId":"phone","name":"Phone","kind":"mobile","binding":"permanent","via":"initial"}"#)))
        #expect(try await pg.head().seq == 1)
        await pg.close()
        // When it is read through the async forms, then each read fails with storage_error
        // (no crash, no hang), and the message names no URL or password
        for read in [{ _ = try await pg.head() }, { _ = try await pg.devices(of: "alice", QueryOptions(asOf: .max)) },
                     { _ = try await pg.treeHead() }] as [@Sendable () async throws -> Void] {
            do {
                try await read()
                Issue.record("a read of a closed store answered")
            } catch let e as LedgerError {
                #expect(e.code == .storageError)
                #expect(!e.message.contains("postgresql://") && !e.message.contains(StorageKind.postgresURL!))
            }
        }
    }
}
