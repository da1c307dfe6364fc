import Foundation
import AuthLedgerTestSupport
import AuthLedgerPostgres
import Testing
@testable import AuthLedger
@testable import AuthLedgerCore

/// Group commit through the writer thread: ordering, gap-free positions, refusal
/// isolation within one batch, durability of acknowledgements, and projections that
/// match a replay. Serialized: `holdWriter` blocks a thread of the cooperative pool (two on a
/// 2-core machine), and two such cases at once (one per backend) starved the tasks they wait for.
@Suite(.serialized) struct GroupCommitTests {
    static let t0 = Timestamp(rfc3339: "2026-03-01T09:00:00Z")!

    func input(_ type: EventType, _ user: String, at seconds: Int64, _ fields: [(Field, FieldValue)]) -> EventInput {
        var d = EventData()
        for (f, v) in fields { d[f] = v }
        return EventInput(event: Event(type: type, user: user, at: GroupCommitTests.t0.adding(seconds: seconds), data: d))
    }

    func register(_ user: String, _ device: String = "d1", at seconds: Int64 = 0) -> EventInput {
        input(.registered, user, at: seconds, [(.deviceId, .string(device)), (.name, .string("Phone \(device)")),
                                               (.kind, .string("mobile")), (.binding, .string("permanent")),
                                               (.via, .string("initial"))])
    }

    func access(_ user: String, _ device: String = "d1", at seconds: Int64) -> EventInput {
        input(.accessed, user, at: seconds, [(.deviceId, .string(device))])
    }

    /// A user's script: registration, then accesses and a challenge approved by the device itself.
    func script(_ user: String, _ n: Int) -> [EventInput] {
        var out = [register(user)]
        for k in 1..<n {
            switch k % 3 {
            case 1: out.append(input(.challengeIssued, user, at: Int64(k), [
                (.challengeId, .string("c\(k)")), (.action, .string("login")),
                (.requestingDeviceId, .string("d2")), (.expiresAt, .time(GroupCommitTests.t0.adding(seconds: Int64(k) + 60)))]))
            case 2: out.append(input(.challengeApproved, user, at: Int64(k), [
                (.challengeId, .string("c\(k - 1)")), (.approverDeviceId, .string("d1"))]))
            default: out.append(access(user, at: Int64(k)))
            }
        }
        return out
    }

    /// Blocks the writer thread until `count` more jobs are queued behind the blocker,
    /// so that they all share the next transaction.
    func holdWriter(_ ledger: Ledger, untilQueued count: Int, _ enqueue: () -> Void) {
        let release = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        ledger.writer.submit({ _ in blocked.signal(); release.wait(); return 0 }, done: { _ in })
        blocked.wait()
        enqueue()
        while ledger.writer.queuedCount < count { usleep(1000) }
        release.signal()
    }

    /// Submits `requests` so that they share one transaction, in this order; their outcomes by name.
    func submitInOneBatch(_ ledger: Ledger, _ requests: [(String, AppendRequest)]) async -> [String: Result<AppendOutcome, Error>] {
        let results = ResultBox()
        let tasks = TaskBox()
        holdWriter(ledger, untilQueued: requests.count) {
            // Queue in a known order: each task is started only after the previous one is queued.
            for (k, (name, request)) in requests.enumerated() {
                tasks.add(Task {
                    do { results.set(name, .success(try await ledger.append(request))) } catch { results.set(name, .failure(error)) }
                })
                while ledger.writer.queuedCount < k + 1 { usleep(500) }
            }
        }
        await tasks.wait()
        return results.all()
    }

    @Test(arguments: StorageKind.all) func concurrentSubmitsGetGapFreeSeqsInCommitOrderAndConsecutiveVersions(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let users = 24, perUser = 15
        let acked = try await withThrowingTaskGroup(of: (String, [RecordedEvent]).self) { group in
            for u in 0..<users {
                group.addTask {
                    let user = "user\(u)"
                    var mine: [RecordedEvent] = []
                    for e in self.script(user, perUser) {
                        mine += try await ledger.append(AppendRequest([e])).appended
                    }
                    return (user, mine)
                }
            }
            var all: [String: [RecordedEvent]] = [:]
            for try await (u, evs) in group { all[u] = evs }
            return all
        }
        let log = try await ledger.events()
        #expect(log.map(\.seq) == Array(1...UInt64(users * perUser)))
        #expect(try await ledger.verify().seq == UInt64(users * perUser))
        for (user, mine) in acked {
            // Each writer awaited every acknowledgement: its events are in its submission order.
            #expect(mine.map(\.version) == Array(1...UInt64(perUser)))
            #expect(mine.map(\.seq) == mine.map(\.seq).sorted())
            let stream = log.filter { $0.event.user == user }
            #expect(stream.map(\.id) == mine.map(\.id))
            #expect(stream.map(\.version) == Array(1...UInt64(perUser)))
        }
        // What the caller was told is exactly what the log holds.
        let bySeq = Dictionary(uniqueKeysWithValues: log.map { ($0.seq, $0) })
        for e in acked.values.joined() { #expect(bySeq[e.seq] == e) }
    }

    @Test(arguments: StorageKind.all) func aRefusedRequestInABatchRefusesOnlyItself(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append([register("alice")])
        let requests: [(String, AppendRequest)] = [
            ("ok1", AppendRequest([register("bob")])),
            // Refused on its second event: its valid first event must vanish too.
            ("bad1", AppendRequest([register("carol"), access("carol", "nope", at: 5)])),
            ("ok2", AppendRequest([access("alice", at: 10)])),
            ("bad2", AppendRequest([register("alice", "d2", at: 20)])),  // initial again: verification_required
            ("ok3", AppendRequest([access("alice", at: 30), access("alice", at: 31)])),
            ("bad3", AppendRequest([access("alice", at: 1)])),  // time_regression after ok3
            ("ok4", AppendRequest([register("dave")])),
        ]
        let r = await submitInOneBatch(ledger, requests)
        func code(_ name: String) -> ErrorCode? {
            if case let .failure(e as LedgerError)? = r[name] { return e.code }
            return nil
        }
        #expect(code("bad1") == .deviceNotFound)
        #expect(code("bad2") == .verificationRequired)
        #expect(code("bad3") == .timeRegression)
        for name in ["ok1", "ok2", "ok3", "ok4"] {
            if case .success? = r[name] {} else { Issue.record("\(name) was not acknowledged: \(String(describing: r[name]))") }
        }
        let log = try await ledger.events()
        #expect(log.map(\.seq) == Array(1...6))
        #expect(!log.contains { $0.event.user == "carol" })
        #expect(log.filter { $0.event.user == "alice" }.map(\.version) == [1, 2, 3, 4])
        #expect(log.map { $0.event.user! } == ["alice", "bob", "alice", "alice", "alice", "dave"])
        #expect(try await ledger.verify().seq == 6)
        let carol = try await ledger.state(of: "carol", asOf: .max).state
        #expect(carol.version == 0 && carol.devices.isEmpty)
        let alice = try await ledger.state(of: "alice", asOf: .max).state
        #expect(alice.devices.count == 1 && alice.version == 4)
    }

    /// PostgreSQL refusing a statement the rules accepted (here a constraint the ledger
    /// knows nothing of; in life a trigger or a limit an operator set): the group's
    /// transaction is rolled back and its requests run again one per transaction,
    /// so only the refused request fails and the others are acknowledged at their seqs.
    @Test(.enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set (tools/test sets it)"))
    func aRequestPostgreSQLRefusesInABatchRefusesOnlyItself() async throws {
        let ledger = try await StorageKind.postgres.freshLedger()
        let pg = try #require(ledger.storage as? PostgresStorage)
        _ = try await ledger.append([register("alice")])
        _ = try await pg.integers("ALTER TABLE \(pg.tables.events) ADD CONSTRAINT no_mallory CHECK (stream <> convert_to('mallory', 'UTF8'))")
        let r = await submitInOneBatch(ledger, [
            ("ok1", AppendRequest([register("bob")])),
            ("bad", AppendRequest([register("mallory"), access("mallory", at: 5)])),
            ("ok2", AppendRequest([access("alice", at: 10)])),
            ("ok3", AppendRequest([register("dave"), access("dave", at: 1)])),
        ])
        if case let .failure(e as LedgerError)? = r["bad"] {
            #expect(e.code == .storageError)
        } else {
            Issue.record("the refused request was acknowledged: \(String(describing: r["bad"]))")
        }
        var acked: [RecordedEvent] = []
        for name in ["ok1", "ok2", "ok3"] {
            if case let .success(o)? = r[name] { acked += o.appended } else { Issue.record("\(name) was not acknowledged: \(String(describing: r[name]))") }
        }
        #expect(pg.refusedGroups.value == 2)
        let log = try await ledger.events()
        #expect(log.map(\.seq) == Array(1...5))
        #expect(log.map { $0.event.user! } == ["alice", "bob", "alice", "dave", "dave"])
        #expect(Array(log.dropFirst()) == acked)
        #expect(try await ledger.verify().seq == 5)
        #expect(try await ledger.state(of: "mallory", asOf: .max).state.version == 0)
        #expect(try await ledger.state(of: "dave", asOf: .max).state.version == 2)
    }

    /// Appends `inputs` in a write transaction of its own, not through `ledger`'s writer
    /// thread and its cache of user states: what another process's writer does.
    static func appendAsAnotherWriter(_ ledger: Ledger, _ inputs: [EventInput]) async throws {
        // (What it reads named first, as the writer's groups name it: PostgreSQL loads it.)
        var load = StorageLoad()
        load.appends = true
        load.states = [systemStream] + inputs.compactMap(\.event.user)
        load.ids = inputs.compactMap(\.event.id)
        for e in inputs.map(\.event) {
            for (kind, id) in UserState.recordIds(of: e) { load.records.append((kind, e.user!, id)) }
        }
        try await ledger.storage.writeGroup(start: { _, _ in }, load: { load }) { w in
            let session = try AppendSession(w)
            _ = try session.applyUnisolated(AppendRequest(inputs))
            try session.finish()
        }
    }

    @Test(arguments: StorageKind.all) func theWritersCachedStatesAreDroppedWhenSomeoneElseCommitted(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(AppendRequest([register("alice")]))
        // Another writer (a transaction of its own, as another process would) moves alice on.
        try await Self.appendAsAnotherWriter(ledger, [access("alice", at: 100)])
        // With a stale cache (lastAt 0, version 1) this would be accepted as version 2.
        await #expect(throws: LedgerError.self) { try await ledger.append(AppendRequest([self.access("alice", at: 50)])) }
        let next = try await ledger.append(AppendRequest([access("alice", at: 150)]))
        #expect(next.appended.map(\.version) == [3])
        #expect(try await ledger.verify().seq == 3)
        #expect(try await ledger.state(of: "alice", asOf: .max).state == ledger.state(of: "alice", asOf: .max, fromScratch: true).state)
    }

    @Test(arguments: StorageKind.all) func aReplayInvalidatesTheWritersCachedStates(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        // Appended outside this ledger's writer, so that its cache does not hold alice yet.
        try await Self.appendAsAnotherWriter(ledger, [register("alice")])
        // Damage alice's maintained projection (as an older build or a bad disk might).
        try await ledger.write { w in try w.putProjectionState("alice", StateCodec.encode(UserState(user: "alice"))) }
        // The writer loads the damaged state: the device is unknown to it.
        await #expect(throws: LedgerError.self) { try await ledger.append(AppendRequest([self.access("alice", at: 10)])) }
        // A rebuild repairs the projection, with the same head; the writer must not reuse its cache.
        try await ledger.replay()
        let ok = try await ledger.append(AppendRequest([access("alice", at: 20)]))
        #expect(ok.appended.map(\.version) == [2])
    }

    /// A replay rebuilds the states from the log: a state whose stream has no event goes,
    /// a damaged one is written again, an intact one keeps its bytes.
    @Test(arguments: StorageKind.all) func aReplayRemovesStatesWithoutEventsAndRewritesTheRest(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(AppendRequest([register("alice"), register("bob"), access("alice", at: 5)]))
        let before = try await ledger.storage.readAsync({ ReadLoad(states: ["alice", "bob"]) }) { r in
            (try r.projectionState("alice"), try r.projectionState("bob"))
        }
        #expect(before.0 != nil && before.1 != nil)
        try await ledger.storage.writeAsync { w in
            try w.putProjectionState("ghost", StateCodec.encode(UserState(user: "ghost")))
            try w.putProjectionState("bob", StateCodec.encode(UserState(user: "bob")))
        }
        try await ledger.replay()
        let after = try await ledger.storage.readAsync({
            var load = ReadLoad(states: ["alice", "bob", "ghost"])
            load.allStates = true
            return load
        }) { r in
            var names: [String] = []
            try r.scanProjectionStates { name, _ in names.append(name); return true }
            return (try r.projectionState("alice"), try r.projectionState("bob"), try r.projectionState("ghost"), names)
        }
        #expect(after.0 == before.0)
        #expect(after.1 == before.1)
        #expect(after.2 == nil)
        #expect(after.3.sorted() == ["alice", "bob"])
    }

    /// `clearProjectionStates` takes every state away for the rest of the transaction at
    /// once (LMDB deletes the keys not put again only when the transaction ends); a state
    /// put in a savepoint that failed stays cleared.
    @Test(arguments: StorageKind.all) func clearedStatesAreGoneForTheTransactionAndOnlyThosePutAgainStay(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(AppendRequest([register("alice"), register("bob"), register("carol")]))
        struct Refused: Error {}
        let fresh: [UInt8] = StateCodec.encode(UserState(user: "alice"))
        try await ledger.write { w in
            try w.clearProjectionStates()
            #expect(try w.projectionState("alice") == nil)
            #expect(try w.projectionState("carol") == nil)
            try w.putProjectionState("alice", fresh)
            #expect(try w.projectionState("alice") == fresh)
            #expect(throws: Refused.self) {
                try w.savepoint { try w.putProjectionState("bob", fresh); throw Refused() }
            }
            #expect(try w.projectionState("bob") == nil)
        }
        let after = try await ledger.storage.readAsync({
            var load = ReadLoad(states: ["alice", "bob"])
            load.allStates = true
            return load
        }) { r in
            var names: [String] = []
            try r.scanProjectionStates { name, _ in names.append(name); return true }
            return (try r.projectionState("alice"), try r.projectionState("bob"), names)
        }
        #expect(after.0 == fresh)
        #expect(after.1 == nil)
        #expect(after.2 == ["alice"])
    }

    /// A request nested in a request that had written nothing yet, which then is refused:
    /// the nested request's writes (it passed) go with the outer's refusal.
    @Test(arguments: StorageKind.all) func aRequestNestedInARefusedOneIsUndoneWithIt(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(AppendRequest([register("alice")]))
        struct Refused: Error {}
        try await ledger.write { w in
            // (Nothing written before: the outer request has nothing to send when the nested one opens.)
            #expect(throws: Refused.self) {
                try w.savepoint {
                    try w.savepoint { try w.putMetaValue("nested-in-refused", [2]) }
                    try w.putMetaValue("outer-refused", [3])
                    throw Refused()
                }
            }
            try w.putMetaValue("after-requests", [1])
        }
        let after = try await ledger.storage.readAsync({ ReadLoad(meta: ["after-requests", "nested-in-refused", "outer-refused"]) }) { r in
            (try r.metaValue("after-requests"), try r.metaValue("nested-in-refused"), try r.metaValue("outer-refused"))
        }
        #expect(after.0 == [1])
        #expect(after.1 == nil)
        #expect(after.2 == nil)
    }

    @Test(arguments: StorageKind.all) func acknowledgedEventsAreInTheLogAfterReopening(_ storage: StorageKind) async throws {
        let path = storage.freshStore()
        var acked: [RecordedEvent] = []
        do {
            let ledger = try await storage.open(path)
            acked = try await withThrowingTaskGroup(of: [RecordedEvent].self) { group in
                for u in 0..<16 {
                    group.addTask {
                        var mine: [RecordedEvent] = []
                        for e in self.script("u\(u)", 10) { mine += try await ledger.append(AppendRequest([e])).appended }
                        return mine
                    }
                }
                var all: [RecordedEvent] = []
                for try await part in group { all += part }
                return all
            }
        }
        let reopened = try await storage.open(path)
        let log = try await reopened.events()
        #expect(log.count == acked.count)
        let bySeq = Dictionary(uniqueKeysWithValues: log.map { ($0.seq, $0) })
        for e in acked { #expect(bySeq[e.seq] == e) }
        #expect(try await reopened.verify().seq == UInt64(acked.count))
    }

    @Test(arguments: StorageKind.all) func partitionedReplayAppliesEachPolicyAtItsPosition(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        func policy(_ cooling: Int64, at seconds: Int64) -> EventInput {
            var d = EventData()
            d[.coolingSeconds] = .int(cooling)
            return EventInput(event: Event(type: .policySet, user: nil, at: GroupCommitTests.t0.adding(seconds: seconds), data: d))
        }
        let users = (0..<40).map { "u\($0)" }
        _ = try await ledger.append([policy(10, at: 0)] + users.map { register($0) })
        _ = try await ledger.append(users.map { input(.renamed, $0, at: 20, [(.deviceId, .string("d1")), (.name, .string("First"))]) })
        _ = try await ledger.append([policy(5000, at: 30)])
        _ = try await ledger.append(users.map { input(.renamed, $0, at: 40, [(.deviceId, .string("d1")), (.name, .string("Second"))]) })
        var maintained: [String: UserState] = [:]
        for u in users { maintained[u] = try await ledger.state(of: u, asOf: .max).state }
        #expect(maintained["u7"]?.coolingUntil == GroupCommitTests.t0.adding(seconds: 5040))
        #expect(try await ledger.replay() == UInt64(2 + users.count * 3))
        for u in users { #expect(try await ledger.state(of: u, asOf: .max).state == maintained[u]) }
        #expect(try await ledger.policy().coolingSeconds == 5000)
    }

    @Test(arguments: StorageKind.all) func replayAfterConcurrentAppendsEqualsMaintainedProjections(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        let users = (0..<20).map { "user\($0)" }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for user in users {
                group.addTask {
                    for e in self.script(user, 12) {
                        do { _ = try await ledger.append(AppendRequest([e])) }
                    }
                    // A refusal in the middle of the traffic changes nothing.
                    await #expect(throws: LedgerError.self) { try await ledger.append(AppendRequest([self.access(user, "ghost", at: 100)])) }
                }
            }
            try await group.waitForAll()
        }
        var maintained: [String: UserState] = [:]
        for u in users { maintained[u] = try await ledger.state(of: u, asOf: .max).state }
        for u in users { #expect(try await ledger.state(of: u, asOf: .max, fromScratch: true).state == maintained[u]) }
        #expect(try await ledger.replay() == UInt64(users.count * 12))
        for u in users {
            let rebuilt = try await ledger.state(of: u, asOf: .max).state
            #expect(rebuilt == maintained[u])
            #expect(rebuilt.version == 12)
        }
    }
}

final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Result<AppendOutcome, Error>] = [:]
    func set(_ k: String, _ v: Result<AppendOutcome, Error>) { lock.lock(); values[k] = v; lock.unlock() }
    func all() -> [String: Result<AppendOutcome, Error>] { lock.lock(); defer { lock.unlock() }; return values }
}

final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var tasks: [Task<Void, Never>] = []
    func add(_ t: Task<Void, Never>) { lock.lock(); tasks.append(t); lock.unlock() }
    var all: [Task<Void, Never>] { lock.withLock { tasks } }
    func wait() async {
        for t in all { await t.value }
    }
}
