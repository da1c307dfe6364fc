import AuthLedgerCore
import AuthLedgerTestSupport
import Foundation
import Testing
@testable import AuthLedger

/// Stream hashes (reference section 14): every user's `s_N` kept in the append transaction
/// equals the fold of its events' leaves — inline and pipelined appends, a refused request
/// in a shared transaction, erasure — replay rebuilds it, `verify` names a wrong one, and a
/// store written before them gets them on open.
@Suite struct StreamHashTests {
    static let t0 = Timestamp(rfc3339: "2026-03-01T09:00:00Z")!
    let group = GroupCommitTests()

    /// `s_N` and the newest seq of `user`, folded from the log's events by the core's
    /// definition (not the writer's code).
    static func expected(_ ledger: Ledger, _ user: String) async throws -> (count: UInt64, hash: Hash32, last: UInt64) {
        var s = Hash32.zero, last: UInt64 = 0, n: UInt64 = 0
        for e in try await ledger.events(user: user) {
            let leaf = RecordedEvent.leaf(e.event, seq: e.seq, version: e.version)
            s = UserIndex.streamHash(s, leaf: Hash32(bytes: Array(leaf)))
            last = e.seq
            n += 1
        }
        return (n, s, last)
    }

    static func expectStored(_ ledger: Ledger, _ users: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for u in users {
            let want = try await expected(ledger, u)
            let got = try await ledger.streamHead(of: u)
            #expect(got.count == want.count, "\(u)", sourceLocation: sourceLocation)
            #expect(got.head == StreamHead(hash: want.hash, last: want.last), "\(u)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: StorageKind.all) func appendsKeepEveryStreamHash(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        // One event at a time, then one large request (hashed on the pipeline's thread).
        for u in ["alice", "bob"] { _ = try await ledger.append(group.script(u, 7)) }
        let many = (0..<50).flatMap { k in group.script("bulk\(k)", 3) }
        #expect(many.count >= HashPipeline.minimumEvents)
        _ = try await ledger.append(many)
        // Concurrent requests of the same users sharing transactions, some refused.
        try await withThrowingTaskGroup(of: Void.self) { g in
            for u in ["alice", "bob", "bulk3"] {
                g.addTask {
                    for k in 0..<6 {
                        _ = try await ledger.append([self.group.access(u, at: 100 + Int64(k))])
                        await #expect(throws: LedgerError.self) { try await ledger.append([self.group.access(u, "ghost", at: 200)]) }
                    }
                }
            }
            try await g.waitForAll()
        }
        try await Self.expectStored(ledger, ["alice", "bob", "bulk0", "bulk3", "bulk49"])
        #expect(try await ledger.streamHead(of: "nobody").count == 0)
        #expect(try await ledger.streamHead(of: "nobody").head == .start)
        try await ledger.verify()
        // Replay writes the same heads again.
        try await ledger.replay()
        try await Self.expectStored(ledger, ["alice", "bob", "bulk0", "bulk3", "bulk49"])
        try await ledger.verify()
    }

    /// Large requests' stream heads are folded on the hashing thread: in one transaction,
    /// after a small request whose leaf the writer folds, beside a large request refused at
    /// its end (its heads dropped), and before another small one, every head is the fold.
    @Test(arguments: StorageKind.all) func pipelinedStreamHeadsFollowTheTransactionsOtherSteps(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(group.script("alice", 4))
        let before = HashPipelineTests.hashedByPipeline(ledger)
        let alice = { (from: Int64, n: Int) in (0..<n).map { self.group.access("alice", at: from + Int64($0)) } }
        let large = group.script("bob", 40) + alice(300, 30)
        // Refused after all its events were admitted: a stream it does not touch is elsewhere.
        let refused = AppendRequest(group.script("carol", 40) + alice(400, 30), expectedVersions: ["nobody": 5])
        let r = await group.submitInOneBatch(ledger, [
            ("small", AppendRequest(alice(200, 1))), ("large", AppendRequest(large)),
            ("refused", refused), ("after", AppendRequest(alice(500, 2))),
        ])
        for name in ["small", "large", "after"] { #expect(throws: Never.self) { try r[name]!.get() } }
        #expect(throws: LedgerError.self) { try r["refused"]!.get() }
        #expect(HashPipelineTests.hashedByPipeline(ledger) - before >= 2 * 70)
        try await Self.expectStored(ledger, ["alice", "bob", "carol"])
        #expect(try await ledger.streamHead(of: "alice").count == 4 + 1 + 30 + 2)
        try await ledger.verify()
    }

    @Test(arguments: StorageKind.all) func aTamperedStreamHashIsNamedAndReplayRepairsIt(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(group.script("alice", 5) + group.script("bob", 4))
        let (count, head) = try await ledger.streamHead(of: "bob")
        // bob's state bytes with another stream hash in front, the rest untouched.
        try await ledger.write(states: ["bob"]) { w in
            let bytes = try #require(try w.projectionState("bob"))
            var s = try bytes.withUnsafeBytes { try StateCodec.decode($0, user: "bob") }
            s.version = count
            var wrong = head!
            wrong.hash.bytes[0] ^= 1
            try w.putProjectionState("bob", StateCodec.encode(s, stream: wrong))
        }
        await #expect(throws: LedgerError.self) { try await ledger.verify() }
        do { try await ledger.verify() } catch let e as LedgerError {
            #expect(e.code == .tampered)
            #expect(e.message.contains("stream hash of bob"))
            #expect(e.seq == head!.last)
        }
        try await ledger.replay()
        try await ledger.verify()
        try await Self.expectStored(ledger, ["alice", "bob"])
    }

    @Test(arguments: StorageKind.all) func erasureKeepsTheStreamHash(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(group.script("alice", 6))
        let before = try await Self.expected(ledger, "alice")
        _ = try await ledger.erase("alice", now: Self.t0.adding(seconds: 3600))
        // The events before the erasure fold to the same hash: the erasure only added its own leaf.
        let events = try await ledger.events(user: "alice")
        let erasedLeaf = RecordedEvent.leaf(events.last!.event, seq: events.last!.seq, version: events.last!.version)
        let after = try await ledger.streamHead(of: "alice")
        #expect(after.count == before.count + 1)
        #expect(after.head?.hash == UserIndex.streamHash(before.hash, leaf: Hash32(bytes: Array(erasedLeaf))))
        try await ledger.verify()
    }

    @Test(arguments: StorageKind.all) func aStoreWithoutStreamHashesGetsThemOnOpen(_ storage: StorageKind) async throws {
        let store = storage.freshStore()
        let keys = storage.keyDirectory(for: store)
        do {
            let ledger = try await storage.open(store, keys: keys)
            _ = try await ledger.append(group.script("alice", 5) + group.script("bob", 3))
            // As an older release left it: states without a stream head, the older layout.
            try await ledger.write(states: ["alice", "bob"]) { w in
                for u in ["alice", "bob"] {
                    let bytes = try #require(try w.projectionState(u))
                    let s = try bytes.withUnsafeBytes { try StateCodec.decode($0, user: u) }
                    try w.putProjectionState(u, StateCodec.encode(s))
                }
                try w.putMetaValue(Ledger.projectionLayoutKey, [2])
            }
            #expect(try await ledger.streamHead(of: "alice").head == nil)
            await ledger.close()
        }
        // (PostgreSQL reads the log in runs: several here.)
        Ledger.replayRun = 3
        defer { Ledger.replayRun = 4096 }
        let reopened = try await storage.open(store, keys: keys)
        try await Self.expectStored(reopened, ["alice", "bob"])
        try await reopened.verify()
    }

    @Test(arguments: StorageKind.all) func aStateWithoutAHeadIsCompletedByTheNextAppend(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(group.script("alice", 4))
        try await ledger.write(states: ["alice"]) { w in
            let bytes = try #require(try w.projectionState("alice"))
            let s = try bytes.withUnsafeBytes { try StateCodec.decode($0, user: "alice") }
            try w.putProjectionState("alice", StateCodec.encode(s))
        }
        _ = try await ledger.append([group.access("alice", at: 50)])
        try await Self.expectStored(ledger, ["alice"])
    }
}
