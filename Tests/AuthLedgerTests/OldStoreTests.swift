import AuthLedger
import AuthLedgerLMDB
import Foundation
import LMDB
import Testing

/// A store written by an earlier release (Fixtures/stores/lmdb-v1, made by
/// `make-lmdb-store.sh` with that release's CLI) opens with today's code, answers every
/// recorded query with the same bytes, before and after a rebuild of its projections, and
/// takes new events on its chain and its Merkle tree.
@Suite(.serialized) struct OldStoreTests {
    static let fixture = Support.fixture("stores")
    static let origin = ["AUTHLEDGER_ORIGIN": "authledger.example/log"]

    /// A copy of the old store (the tests change it); key files as the CLI wrote them (0600).
    static func copy() throws -> String {
        let dir = Support.tempDir("authledger-old-store") + "/store"
        try FileManager.default.copyItem(atPath: fixture.appendingPathComponent("lmdb-v1/store").path, toPath: dir)
        for key in ["checkpoint.key", "server.key"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: dir + "/" + key)
        }
        return dir
    }

    /// The recorded queries (arguments after `authledger`), numbered as their answers.
    static func queries() throws -> [(number: Int, args: [String])] {
        let text = try String(contentsOf: fixture.appendingPathComponent("queries.txt"), encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init).filter { !$0.isEmpty && !$0.hasPrefix("#") }
        return lines.enumerated().map { ($0.offset + 1, $0.element.split(separator: " ").map(String.init)) }
    }

    static func answer(_ n: Int) throws -> String {
        try String(contentsOf: fixture.appendingPathComponent("lmdb-v1/answers/\(n).out"), encoding: .utf8)
    }

    /// Runs the CLI on a dispatch thread: the test's cooperative thread is not held while
    /// the child runs (the suite starts some forty-five of them; other suites' servers need the pool).
    static func run(_ args: [String], store: String) async throws -> CLIRun {
        try await withCheckedThrowingContinuation { c in
            DispatchQueue.global().async { c.resume(with: Result { try CLI.exec(Support.binary, args + ["--store", store], env: origin) }) }
        }
    }

    /// Every query's answer, byte for byte as the earlier release gave it.
    static func expectRecordedAnswers(store: String, _ when: String) async throws {
        let all = try queries()
        #expect(all.count == 19)
        for (n, args) in all {
            let r = try await run(args, store: store)
            #expect(r.status == 0, "\(when): authledger \(args.joined(separator: " ")): \(r.stderr)")
            #expect(r.stdout == (try answer(n)), "\(when): authledger \(args.joined(separator: " ")) answers differently")
        }
    }

    @Test func theOldStoreAnswersAsTheReleaseThatWroteIt() async throws {
        let store = try Self.copy()
        try await Self.expectRecordedAnswers(store: store, "as found")
        let replay = try await Self.run(["replay", "--json"], store: store)
        #expect(replay.status == 0 && replay.json?["replayed"]?.intValue == 70, "\(replay.stdout) \(replay.stderr)")
        try await Self.expectRecordedAnswers(store: store, "after replay")
    }

    /// Where layouts 2 and 3 keep a stream's state in `streams`: its key ‖ 0x00 ‖ version
    /// 0 (layout 2: before the stream's entries) or version 2⁶⁴−1 (layout 3: after them).
    static func stateKey(_ user: String, layout: Int) -> [UInt8] {
        Array(user.utf8) + [0] + (layout == 2 ? UInt64(0) : UInt64.max).bigEndianBytes
    }

    /// What the raw databases hold: entries of `states`, the `layout` meta value, the
    /// entries of `streams` at version 0 (layout 2's states) and at version 2⁶⁴−1 (layout
    /// 3's), and `user`'s state where layout 3 keeps it.
    static func rawLayout(_ store: String, user: String)
        throws -> (states: Int, layout: [UInt8]?, versionZero: Int, stateEntries: Int, streamsState: [UInt8]?) {
        let env = try Environment(path: store)
        let states = try env.database("states"), meta = try env.database("meta"), streams = try env.database("streams")
        return try env.read { txn in
            var (zero, last) = (0, 0)
            let c = try txn.cursor(streams)
            var entry = try c.first()
            while let (k, _) = entry {
                if k.count > 9 && k[k.count - 9] == 0 {
                    switch k.loadBigEndianUInt64(at: k.count - 8) {
                    case 0: zero += 1
                    case .max: last += 1
                    default: break
                    }
                }
                entry = try c.next()
            }
            return (try txn.count(states), try txn.get(meta, Array("layout".utf8)), zero, last,
                    try txn.get(streams, stateKey(user, layout: 3)))
        }
    }

    /// Rewrites the copy as the release of layout 2 left it when it opened the store: the
    /// states at version 0 of `streams`, `layout` 2.
    static func makeLayoutTwo(_ store: String) throws {
        let env = try Environment(path: store)
        let states = try env.database("states"), meta = try env.database("meta"), streams = try env.database("streams")
        try env.write { txn in
            var moved: [([UInt8], [UInt8])] = []
            let c = try txn.cursor(states)
            var entry = try c.first()
            while let (k, v) = entry {
                moved.append((Array(k) + [UInt8](repeating: 0, count: 9), Array(v)))
                entry = try c.next()
            }
            for (k, v) in moved { try txn.put(streams, k, v) }
            try txn.clear(states)
            try txn.put(meta, Array("layout".utf8), [2])
        }
    }

    @Test func openingMovesTheStatesBesideTheirStreams() async throws {
        let store = try Self.copy()
        // Given the old layout: states in their own database, no layout value
        let before = try Self.rawLayout(store, user: "alice")
        #expect(before.states >= 10 && before.layout == nil && before.stateEntries == 0 && before.versionZero == 0 && before.streamsState == nil)
        let alice = try await Self.run(["devices", "alice", "--include-revoked", "--json", "--now", "2026-03-08T00:00:00Z"], store: store)
        // Then opening it moved each state, bytes unchanged, into `streams` after the stream's entries
        let after = try Self.rawLayout(store, user: "alice")
        #expect(after.states == 0 && after.layout == [3] && after.stateEntries == before.states && after.versionZero == 0)
        #expect(after.streamsState != nil && after.streamsState?.isEmpty == false)
        #expect(alice.stdout == (try Self.answer(4)))
        // Right after alice's newest index entry (the one a commit puts beside it): the
        // entry before is one of alice's index entries, and no key of alice's sorts later
        let previous = try #require(try Self.entryBefore(store, Self.stateKey("alice", layout: 3)))
        let prefix = Array("alice".utf8) + [0]
        #expect(previous.count == prefix.count + 8 && previous.starts(with: prefix))
        #expect(previous.withUnsafeBytes { $0.loadBigEndianUInt64(at: prefix.count) } > 1)
    }

    /// The key of the `streams` entry just before `key`.
    static func entryBefore(_ store: String, _ key: [UInt8]) throws -> [UInt8]? {
        let env = try Environment(path: store)
        let streams = try env.database("streams")
        return try env.read { txn in
            let c = try txn.cursor(streams)
            guard try c.seek(key)?.0.elementsEqual(key) == true else { return nil }
            return try c.prev().map { Array($0.0) }
        }
    }

    @Test func aLayoutTwoStoreHasItsStatesMovedAfterTheirStreams() async throws {
        // Given the store as layout 2 kept it: each state at version 0 of its stream
        let store = try Self.copy()
        let states = try Self.rawLayout(store, user: "alice").states
        try Self.makeLayoutTwo(store)
        let two = try Self.rawLayout(store, user: "alice")
        #expect(two.layout == [2] && two.states == 0 && two.versionZero == states && two.stateEntries == 0)
        let aliceBefore = try Self.stateAt(store, Self.stateKey("alice", layout: 2))
        // When today's release opens it, then every state is after its stream's entries, the state unchanged
        try await Self.expectRecordedAnswers(store: store, "layout 2 opened")
        let three = try Self.rawLayout(store, user: "alice")
        #expect(three.layout == [3] && three.versionZero == 0 && three.stateEntries == states)
        // (The state itself unchanged; the rebuild on open put alice's stream hash in front of it.)
        let moved = try #require(three.streamsState), old = try #require(aliceBefore)
        #expect(try moved.withUnsafeBytes { try StateCodec.decode($0, user: "alice") } == old.withUnsafeBytes { try StateCodec.decode($0, user: "alice") })
        #expect(try moved.withUnsafeBytes { try StateCodec.decodeStream($0).head } != nil)
        // And it takes new events and answers the same after a rebuild
        let replay = try await Self.run(["replay", "--json"], store: store)
        #expect(replay.status == 0 && replay.json?["replayed"]?.intValue == 70, "\(replay.stdout) \(replay.stderr)")
        try await Self.expectRecordedAnswers(store: store, "layout 2, after replay")
        #expect(try Self.rawLayout(store, user: "alice").stateEntries == states)
    }

    static func stateAt(_ store: String, _ key: [UInt8]) throws -> [UInt8]? {
        let env = try Environment(path: store)
        let streams = try env.database("streams")
        return try env.read { txn in try txn.get(streams, key) }
    }

    @Test func aStoreOfALaterLayoutIsRefused() async throws {
        let store = try Self.copy()
        do {
            let env = try Environment(path: store)
            let meta = try env.database("meta")
            try env.write { txn in try txn.put(meta, Array("layout".utf8), [4]) }
        }
        let r = try await Self.run(["devices", "alice", "--json"], store: store)
        // A release older than the store: the setup's mistake (exit 2), not a storage failure
        #expect(r.status == 2)
        #expect(r.stderr.contains("configuration_error") && r.stderr.contains("layout 4 is newer"), "\(r.stderr)")
        let untouched = try Self.rawLayout(store, user: "alice")
        #expect(untouched.states >= 10 && untouched.stateEntries == 0, "nothing was moved")
    }

    @Test func newEventsExtendTheOldChainAndTree() async throws {
        let store = try Self.copy()
        let oldHead = try #require(try JSON.parse(try Self.answer(1))["head"])
        let oldCheckpoint = try Self.answer(3).split(separator: "\n").map(String.init)
        let oldRoot = try #require(Data(base64Encoded: oldCheckpoint[2]))

        let appended = try await Self.run(["register", "ivan", "laptop", "--name", "Ivan's Laptop", "--now", "2026-03-09T00:00:00Z"], store: store)
        #expect(appended.status == 0, "\(appended.stderr)")
        let history = try await Self.run(["history", "ivan", "--json", "--now", "2026-03-09T00:00:00Z"], store: store)
        let first = try #require(history.json?.arrayValue?.first)
        #expect(first["seq"]?.intValue == 71)
        #expect(first["prev"]?.stringValue == oldHead["hash"]?.stringValue, "the new event chains to the old head")

        let verified = try await Self.run(["verify", "--json"], store: store)
        #expect(verified.status == 0 && verified.json?["head"]?["seq"]?.intValue == 71, "\(verified.stdout) \(verified.stderr)")

        let proof = try #require(try await Self.run(["prove-consistency", "70", "71", "--json"], store: store).json)
        let hashes = (proof["proof"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { Data(base64Encoded: $0) } }
        let newRoot = try #require(proof["root"]?.stringValue.flatMap { Data(base64Encoded: $0) })
        #expect(proof["oldRoot"]?.stringValue == oldCheckpoint[2], "the tree of size 70 is the one the old release signed")
        #expect(MerkleTree.verifyConsistency(oldSize: 70, oldRoot: Hash32(bytes: Array(oldRoot)), newSize: 71, newRoot: Hash32(bytes: Array(newRoot)),
                                             proof: hashes.map { Hash32(bytes: Array($0)) }))
    }
}
