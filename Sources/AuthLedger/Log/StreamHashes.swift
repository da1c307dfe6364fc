import AuthLedgerCore
import Crypto
import Logging

/// The head of a user's stream hash chain (section 14 of the reference): `s_N`, the hash
/// after the user's `N` events (`s_k = SHA-256(s_{k-1} ‖ leaf_k)`, `s_0` zero), and `last`,
/// the seq of the newest. Stored in front of the user's maintained state (`StateCodec`,
/// format 2) in the transaction of the events; `N` is the state's version. An erasure
/// changes no leaf, so no stream head.
package struct StreamHead: Sendable, Equatable {
    /// `s_N`.
    package var hash: Hash32
    /// The seq of the stream's newest event (0: none).
    package var last: UInt64

    package init(hash: Hash32, last: UInt64) {
        self.hash = hash
        self.last = last
    }

    /// The head of a stream without events.
    package static let start = StreamHead(hash: .zero, last: 0)

    /// The head after one more event, of leaf hash `leaf` at `seq`.
    func adding(_ leaf: TreeFrontier.Node, seq: UInt64) -> StreamHead {
        leaf.withUnsafeBytes { adding(leafBytes: $0, seq: seq) }
    }

    /// `adding` with the leaf hash's 32 bytes where they lie (a stored tree's leaf).
    package func adding(leafBytes leaf: UnsafeRawBufferPointer, seq: UInt64) -> StreamHead {
        StreamHead(hash: hash.bytes.withUnsafeBytes { Self.step($0, leaf) }.hash, last: seq)
    }

    /// One step of the chain, `SHA-256(prev ‖ leaf)`: `adding` and a replay's `StreamFold`
    /// compute it here (a damaged store's leaf of another length, which verify names, is
    /// hashed as it is).
    static func step(_ prev: UnsafeRawBufferPointer, _ leaf: UnsafeRawBufferPointer) -> TreeFrontier.Node {
        TreeFrontier.Node.sha256(prev, leaf)
    }

    /// The user's value commitment `c(U)` in the index, for a stream of `count` events.
    package func commitment(count: UInt64) -> Hash32 {
        UserIndex.commitment(count: count, streamHash: hash, last: last)
    }
}

/// A stream's head while many events are folded into it (a replay's partitions): the hash
/// kept inline (32 bytes), so that an event costs its SHA-256 and no allocation; `head`
/// makes the `StreamHead` (the same hashes as `StreamHead.adding`).
struct StreamFold {
    private var hash: TreeFrontier.Node?
    private(set) var last: UInt64 = 0

    init() {}

    /// One more event, of leaf hash `leaf` (32 bytes) at `seq`.
    mutating func add(leafBytes leaf: UnsafeRawBufferPointer, seq: UInt64) {
        hash = hash.map { prev in prev.withUnsafeBytes { StreamHead.step($0, leaf) } }
            ?? Hash32.zero.bytes.withUnsafeBytes { StreamHead.step($0, leaf) }
        last = seq
    }

    var head: StreamHead { hash.map { StreamHead(hash: $0.hash, last: last) } ?? .start }
}

/// A step of a user's stream hash chain waiting in a transaction (`AppendSession.streamLeaves`):
/// a leaf to fold in, or the head the hashing thread folded a run of leaves into (`HashPipeline`).
enum StreamStep {
    case leaf(seq: UInt64, TreeFrontier.Node)
    case head(StreamHead)
}

extension AppendSession {
    /// Folds the steps of the transaction's user events into their streams' heads, in seq
    /// order (before `finish` writes the states). A head this session did not load with its
    /// state (a state adopted from the writer's cache) is read from the stored state (the
    /// group's load step named it: the streams a group appends to are loaded); one
    /// stored without a head (written before stream hashes) is computed from the stream.
    func foldStreamLeaves() throws {
        for e in streamLeaves {
            switch e.step {
            case .head(let head):
                streams[e.user] = head
            case .leaf(let seq, let leaf):
                let head = try streams[e.user] ?? storedStreamHead(e.user, before: seq)
                streams[e.user] = head.adding(leaf, seq: seq)
            }
        }
        streamLeaves = []
    }

    /// The head of `user`'s stream over its events before `before`, as stored.
    private func storedStreamHead(_ user: String, before: UInt64) throws -> StreamHead {
        guard let bytes = try w.projectionState(user) else { return .start }
        let (head, count) = try bytes.withUnsafeBytes { try StateCodec.decodeStream($0) }
        if let head { return head }
        return try Ledger.streamHead(w, user, count: count, before: before)
    }
}

extension Ledger {
    /// The head of `user`'s stream computed from its stored events with seq before
    /// `before` (at most `count`): for a state stored without one.
    static func streamHead(_ r: any StorageReader, _ user: String, count: UInt64 = .max, before: UInt64 = .max) throws -> StreamHead {
        try streamPrefix(r, user, count: count, before: before).head
    }

    /// The head of `user`'s stream over its stored events with seq before `before` (at most
    /// `count` of them), and how many events that is.
    static func streamPrefix(_ r: any StorageReader, _ user: String, count: UInt64 = .max, before: UInt64 = .max) throws -> (head: StreamHead, count: UInt64) {
        var head = StreamHead.start
        var leaves = StoredLeaf()
        var n: UInt64 = 0
        try r.scanStream(user) { _, seq in
            guard seq < before, n < count else { return false }
            let leaf = try r.withEventBytes(seq) { b in
                guard let b else { throw LedgerError(.tampered, "the stream index points at a missing event", seq: seq) }
                return try leaves.leafOrDecode(b, seq: seq)
            }
            head = head.adding(leaf, seq: seq)
            n += 1
            return true
        }
        return (head, n)
    }
}

extension Ledger {
    /// Puts every user's stream head in front of its state, computed from the log in one
    /// scan (a store written before stream hashes, layout 2): the states themselves are
    /// kept as they are, byte for byte, and no rule runs (an old log that today's rules
    /// refuse still opens, and `verify` names it). Progress is logged every 2^20 events.
    func buildStreamHashesOnOpen(head: UInt64) async throws {
        logger.notice("user states without stream hashes; computing them from the log", metadata: ["head": "\(head)"])
        let logger = self.logger
        let n: Int
        if let scanning = storage as? AsyncBatchScanning {
            // PostgreSQL: the write locks the head; the log is scanned in runs and the
            // users' states read while it waits, then written with their heads.
            n = try await writer.exclusiveAsync { [storage] in
                try await scanning.writeAwaiting({ locked -> ([String: StreamHead], [String: [UInt8]?]) in
                    var fold = StreamHeadsFold(through: head, logger: logger)
                    var failure: (any Error)?
                    try await scanning.scanRuns(from: 1, through: head, run: Ledger.replayRun, start: { _ in }) { batch in
                        do {
                            try batch.forEach { seq, bytes, _ in _ = try fold.add(seq, bytes) }
                            return true
                        } catch {
                            failure = error
                            return false
                        }
                    }
                    if let failure { throw failure }
                    let users = Array(fold.heads.keys)
                    let states = try await storage.readAsync({ ReadLoad(states: users) }) { r in
                        try Dictionary(uniqueKeysWithValues: users.map { ($0, try r.projectionState($0)) })
                    }
                    return (fold.heads, states)
                }) { w, scanned in
                    try Ledger.putStreamHeads(w, scanned.0) { scanned.1[$0] ?? nil }
                }
            }
        } else {
            let storage = try inPlace
            n = try await writer.exclusive {
                try storage.write { w in
                    var fold = StreamHeadsFold(through: head, logger: logger)
                    try w.scan(from: 1) { seq, bytes in try fold.add(seq, bytes) }
                    return try Ledger.putStreamHeads(w, fold.heads) { try w.projectionState($0) }
                }
            }
        }
        logger.notice("stream hashes computed", metadata: ["users": "\(n)", "head": "\(head)"])
    }

    /// Puts every user's stream head in front of its stored state (`state`), and the layout
    /// with stream hashes; returns the count of users.
    private static func putStreamHeads(_ w: any StorageWriter, _ heads: [String: StreamHead],
                                       state: (String) throws -> [UInt8]?) throws -> Int {
        for (user, h) in heads {
            guard let bytes = try state(user) else { continue }
            try w.putProjectionState(user, try StateCodec.withStreamHead(bytes, h))
        }
        try w.putMetaValue(Ledger.projectionLayoutKey, Ledger.projectionLayout)
        return heads.count
    }
}

/// Every user's stream head over the log's events 1…`through`, one event at a time
/// (`buildStreamHashesOnOpen`); progress is logged every 2^20 events.
private struct StreamHeadsFold {
    let through: UInt64
    let logger: Logger
    var heads: [String: StreamHead] = [:]
    var leaves = StoredLeaf()

    init(through: UInt64, logger: Logger) {
        self.through = through
        self.logger = logger
    }

    /// Adds event `seq`; false past `through`.
    mutating func add(_ seq: UInt64, _ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard seq <= through else { return false }
        guard let user = EventCodec.user(bytes) else { throw LedgerError(.tampered, "stored event is not decodable", seq: seq) }
        if !user.isEmpty { heads[user] = heads[user, default: .start].adding(try leaves.leafOrDecode(bytes, seq: seq), seq: seq) }
        if seq % 1_048_576 == 0 { logger.notice("stream hashes", metadata: ["done": "\(seq)", "of": "\(through)"]) }
        return true
    }
}
