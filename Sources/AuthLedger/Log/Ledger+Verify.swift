import AuthLedgerCore
import Foundation

extension Ledger {
    // MARK: Verify and replay

    /// Events per run of `verify`'s scan on a backend that reads the log in runs
    /// (PostgreSQL). (A test sets it small, to cross many runs.)
    nonisolated(unsafe) static var verifyRun = 4096

    /// Re-computes every hash and index, and checks that the maintained projections equal
    /// a replay of the log. Throws `tampered` naming the first bad seq (for a projection,
    /// the last seq of its stream).
    ///
    /// Whole, in one consistent snapshot, and no thread of the cooperative pool does the
    /// work or waits for the store: LMDB's checks run over its memory map in place, in one
    /// blocking call handed to `runner` (minutes of CPU and page faults for a large log; by
    /// default on a thread of its own); PostgreSQL's read the log in runs whose answers are
    /// awaited (`AsyncBatchScanning.snapshot`), a run and the per-user state of the replay
    /// in memory at a time, and do not use `runner`.
    ///
    /// - Parameter runner: where LMDB's checks run; a service with a pool of threads for
    ///   blocking work passes a runner over it, so a verification starts no thread.
    @discardableResult
    public func verify(on runner: any BlockingWorkRunner = DedicatedThreadRunner(name: "authledger-verify")) async throws -> Head {
        if let scanning = storage as? AsyncBatchScanning {
            return try await scanning.snapshot { try await Ledger.verify($0) }
        }
        let storage = try inPlace
        return try await runner.run { try Ledger.verifyInPlace(storage) }
    }

    /// `verify` on a store that reads in place (LMDB): one read transaction, the index
    /// entries of each event looked up in its indexes.
    private static func verifyInPlace(_ storage: any InPlaceStorage) throws -> Head {
        try storage.read { r in
            var check = LogCheck(indexed: try UserIndexPages.position(r).size)
            try r.scan(from: 0) { seq, bytes in
                try check.next(seq)
                // Disclosed values must match their commitments (the values store is checked too).
                let rec = try r.recordedEvent(seq, bytes, check: true)
                try check.add(rec, seq: seq, treeHash: { try r.withTreeHash($0, $1) },
                              idPoints: { try r.seq(forId: rec.id) == seq },
                              streamPoints: { try r.seq(stream: rec.event.stream, version: rec.version) == seq })
                return true
            }
            return try check.finish(r)
        }
    }

    /// `verify` over a snapshot read in steps (PostgreSQL): the log in runs that carry each
    /// event's personal values, the keys of its index entries (the id and stream indexes are
    /// unique indexes over its own row's `id`, `stream` and `version`: an entry points at
    /// the event exactly when the row carries the event's own) and the tree hashes its leaves
    /// complete; then, loaded in two steps, what the checks after the scan read: the user
    /// index and its log, the states, the records and the counts, and the log's roots the
    /// index log's entries name.
    private static func verify(_ s: any SnapshotReading) async throws -> Head {
        try await s.load(ReadLoad(meta: [UserIndexPages.stateKey]))
        var check = LogCheck(indexed: try UserIndexPages.position(s.loaded).size)
        try await s.indexedRuns(from: 0, run: verifyRun) { run in
            try run.forEach { seq, bytes, personal, id, stream, version in
                try check.next(seq)
                var rec = try EventCodec.decode(bytes, seq: seq)
                if rec.event.personal != nil, rec.event.user != nil, let personal {
                    try PersonalCodec.disclose(personal, into: &rec.event, seq: seq, check: true)
                }
                try check.add(rec, seq: seq, treeHash: { try run.withTreeHash($0, $1) },
                              idPoints: { id.elementsEqual(rec.id.bytes) },
                              streamPoints: { version == rec.version && stream.elementsEqual(rec.event.stream.utf8) })
            }
            return true
        }
        var after = ReadLoad(meta: [UserIndexLog.sizeKey])
        after.metaPrefixes = ["userindex/"]
        (after.allStates, after.allRecords, after.treeSize, after.counts) = (true, true, true, true)
        try await s.load(after)
        // The log's roots at the index log's entries' sizes (what is malformed is the checks' finding: named nothing here).
        let r = s.loaded
        let entries = (try? UserIndexLog.size(r)) ?? 0
        try await s.load(Ledger.treeLoad { t in
            for i in 0..<entries {
                guard let e = try? UserIndexLog.entry(r, i) else { continue }
                _ = try? t.root(e[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
            }
        })
        return try check.finish(s.loaded)
    }
}

/// `verify`'s checks, whatever reads the store: the log event by event (`next`, then
/// `add`), then what the scan leaves to compare (`finish`).
struct LogCheck {
    private var prev = Hash32.zero
    private var expected: UInt64 = 1
    private var versions: [String: UInt64] = [:]
    // Replayed alongside: the maintained projections must equal it (queries at the head answer from them).
    private var users: [String: UserState] = [:]
    private var system = SystemState()
    private var lastSeq: [String: UInt64] = [:]
    private var streams: [String: StreamHead] = [:]
    // The user index is checked against the streams as of the size it covers.
    private let indexed: UInt64
    private var atIndex: (streams: [String: StreamHead], counts: [String: UInt64]) = ([:], [:])
    private var tree = TreeCheck()

    init(indexed: UInt64) { self.indexed = indexed }

    /// The next stored seq: the one after the last, else `tampered`.
    func next(_ seq: UInt64) throws {
        guard seq == expected else {
            throw LedgerError(.tampered, seq < expected ? "unexpected event key" : "event missing", seq: min(seq, expected))
        }
    }

    /// The event at `seq` (its personal values checked), its stored tree hashes
    /// (`treeHash`), and whether its id and stream index entries point at it.
    mutating func add(_ rec: RecordedEvent, seq: UInt64, treeHash: (UInt64, (UnsafeRawBufferPointer?) throws -> Void) throws -> Void,
                      idPoints: () throws -> Bool, streamPoints: () throws -> Bool) throws {
        guard rec.prev == prev else { throw LedgerError(.tampered, "prev does not link to the previous hash", seq: seq) }
        // (Recomputed by the core's hashing, not the writer's: verify checks one with the other.)
        let digest = RecordedEvent.leaf(rec.event, seq: seq, version: rec.version)
        let hash = RecordedEvent.chain(prev: prev, leaf: digest)
        let leaf = TreeFrontier.Node(digest)
        guard hash == rec.hash else { throw LedgerError(.tampered, "hash does not match the event's content", seq: seq) }
        try tree.add(leaf, seq: seq, treeHash)
        let stream = rec.event.stream
        let v = versions[stream, default: 0] + 1
        guard rec.version == v else { throw LedgerError(.tampered, "stream version out of order", seq: seq) }
        versions[stream] = v
        guard try idPoints() else { throw LedgerError(.tampered, "id index does not point at this event", seq: seq) }
        guard try streamPoints() else { throw LedgerError(.tampered, "stream index does not point at this event", seq: seq) }
        do {
            if let user = rec.event.user {
                try users[user, default: UserState(user: user)].evolve(rec.event, policy: system.policy)
            } else {
                try system.evolve(rec.event)
            }
        } catch {
            throw LedgerError(.tampered, "event breaks the rules (\((error as? LedgerError)?.code.rawValue ?? "\(error)"))", seq: seq)
        }
        lastSeq[stream] = seq
        if rec.event.user != nil { streams[stream] = streams[stream, default: .start].adding(leaf, seq: seq) }
        if seq == indexed { atIndex = (streams, versions) }
        prev = hash
        expected += 1
    }

    /// The checks after the scan, over `r`: the head, the tree's size, the user index, the
    /// index counts, and the maintained projections and records against the replay.
    func finish(_ r: any StorageReader) throws -> Head {
        let head = try r.head()
        let last = expected - 1
        guard head.seq == last, head.hash == prev else {
            throw LedgerError(.tampered, "head does not match the last event", seq: min(head.seq, last) + 1)
        }
        try tree.finish(treeHashCount: try r.treeHashCount())
        if indexed > last { throw LedgerError(.tampered, "the user index covers more than the log", seq: last + 1) }
        if indexed > 0 { try Ledger.checkUserIndex(r, size: indexed, streams: atIndex.streams, counts: atIndex.counts) }
        let counts = try r.indexCounts()
        guard counts.events == Int(last), counts.ids == Int(last), counts.streams == Int(last) else {
            throw LedgerError(.tampered, "an index holds entries for events not in the log", seq: last + 1)
        }
        if try r.checkpoint() == head.seq {
            var stored = 0
            try r.scanProjectionStates { key, bytes in
                stored += 1
                if key != systemStream, let head = streams[key] {
                    // Named on its own: what a user proof commits to (section 14).
                    guard (try? StateCodec.decodeStream(bytes).head) == head else {
                        throw LedgerError(.tampered, "the stream hash of \(key) differs from its events' leaves", seq: head.last)
                    }
                }
                let same = key == systemStream
                    ? (try? StateCodec.decodeSystem(bytes)) == system
                    : users[key] != nil && (try? StateCodec.decode(bytes, user: key)) == users[key]!.compacted()
                guard same else {
                    throw LedgerError(.tampered, "a maintained projection differs from a replay of its stream", seq: lastSeq[key] ?? last + 1)
                }
                return true
            }
            guard stored == users.count + (system.version > 0 ? 1 : 0) else {
                throw LedgerError(.tampered, "a stream has no maintained projection", seq: last + 1)
            }
            // The challenge, OTP and grant indexes: exactly the records of the replay.
            var counts: [RecordKind: Int] = [:]
            for (user, s) in users {
                for (kind, id, bytes) in s.encodedRecords() {
                    guard try r.record(kind, user: user, id: id) == bytes else {
                        throw LedgerError(.tampered, "a \(kind) index entry differs from a replay of its stream", seq: lastSeq[user] ?? last + 1)
                    }
                    counts[kind, default: 0] += 1
                }
            }
            for kind in RecordKind.allCases {
                guard try r.recordCount(kind) == counts[kind, default: 0] else {
                    throw LedgerError(.tampered, "the \(kind) index holds entries no event made", seq: last + 1)
                }
            }
        }
        return head
    }
}
