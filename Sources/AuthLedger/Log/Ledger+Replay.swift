import AuthLedgerCore
import Foundation

extension Ledger {
    /// Rebuilds every maintained projection from the log. `progress(done, total)` is
    /// called now and then. Returns the number of events replayed.
    ///
    /// Streams are independent but for the policy, so the rebuild is partitioned by
    /// stream (two partitions per core, run over the cores with the stored tree's check in
    /// chunks): every partition scans the log in `seq` order (LMDB scans at millions of
    /// events per second), applies every `policy.set`, and decodes and folds only its own
    /// users' events. The result is the same as a sequential fold. States are written in the
    /// one write transaction, which also keeps other writers out while the partitions read the same snapshot. Runs alone on the
    /// writer thread while the calling task is suspended.
    @discardableResult
    public func replay(progress: (@Sendable (UInt64, UInt64) -> Void)? = nil) async throws -> UInt64 {
        if let scanning = storage as? AsyncBatchScanning {
            return try await writer.exclusiveAsync { [self] in try await replayWaitFree(scanning, progress: progress) }
        }
        return try await writer.exclusive { [self] in try replayOnWriter(progress: progress) }
    }

    /// Two partitions per core by default: smaller pieces keep every core busy to the end.
    private var replayParts: Int { max(1, min(configuration.replayPartitions ?? 2 * ProcessInfo.processInfo.activeProcessorCount, 8)) }

    /// The replay on the writer's task on a store that scans without waiting (PostgreSQL):
    /// its write transaction (`writeAwaiting`) locks the head, the log is scanned while the
    /// transaction waits for it, and the results are written by the body. No thread waits
    /// for the store.
    private func replayWaitFree(_ scanning: any AsyncBatchScanning, progress: (@Sendable (UInt64, UInt64) -> Void)?) async throws -> UInt64 {
        let parts = replayParts
        let report = progress.map { p in UncheckedSendable<(UInt64, UInt64) -> Void>(p) }
        return try await scanning.writeAwaiting({ [self] head in
            (head, await replayOnceAsync(scanning, parts: parts, through: head.seq, progress: report))
        }) { w, scanned in
            let (head, scan) = scanned
            try w.clearProjectionStates()
            try w.clearRecords()
            return try Ledger.writeReplay(w, head: head, scan, progress: progress)
        }
    }

    private func replayOnWriter(progress: ((UInt64, UInt64) -> Void)?) throws -> UInt64 {
        let storage = try inPlace
        return try storage.write { w in
            let head = try w.head()
            try w.clearProjectionStates()
            try w.clearRecords()
            let parts = replayParts
            let scan = ReplayScan(box: ReplayPartitions(parts), leaves: LeafBuffer())
            let (box, leaves) = (scan.box, scan.leaves)
            let report = progress.map { p in UncheckedSendable(p) }
            replayInPieces(storage, parts: parts, through: head.seq, box: box, leaves: leaves, progress: report)
            return try Ledger.writeReplay(w, head: head, scan, progress: progress)
        }
    }

    /// Writes what the partitions folded and, when the stored tree is not the log's, the tree.
    private static func writeReplay(_ w: any StorageWriter, head: Head, _ scan: ReplayScan,
                                    progress: ((UInt64, UInt64) -> Void)?) throws -> UInt64 {
        let (box, leaves, parts) = (scan.box, scan.leaves, scan.box.results.count)
        // A partition's refusal (a stored event that does not decode or fold) is reported
        // first; a partition stopped because another consumer of the one scan failed is not.
        for part in 0..<parts { if case let .failure(e)? = box.results[part], !(e is ReplayFeed.Stopped) { throw e } }
        // The tree next (only when it is not intact), its leaves freed before the states are written.
        guard let tree = leaves.result else { throw LedgerError(.storageError, "the replay's results were already written") }
        if let all = try tree.get() { try Ledger.rebuildTree(w, leaves: all) }
        leaves.result = nil
        var n: UInt64 = 0
        var system = SystemState()
        for part in 0..<parts {
            // Taken out of the box and consumed from the end: each encoded state and
            // record is freed as soon as the transaction holds its copy, so the two
            // never coexist in full (1M events: ~40 MB less at the peak).
            var r = try box.take(part).get()
            while let (user, bytes) = r.states.popLast() { try w.putProjectionState(user, bytes) }
            while let (kind, user, id, bytes) = r.records.popLast() { try w.putRecord(kind, user: user, id: id, bytes) }
            n += r.userEvents
            if part == 0 { system = r.system; n += r.system.version }
        }
        if system.version > 0 { try w.putProjectionState(systemStream, StateCodec.encode(system)) }
        try w.setCheckpoint(head.seq)
        // Tells writers that cached states from before this rebuild are not to be reused.
        let (a, b) = RandomBits.shared.next2()
        try w.putMetaValue(Ledger.projectionGenerationKey, a.bigEndianBytes8 + b.bigEndianBytes8)
        try w.putMetaValue(Ledger.projectionLayoutKey, head.seq > 0 ? Ledger.projectionLayout : nil)
        progress?(n, head.seq)
        return n
    }

    /// Meta key changed by every rebuild of the projections.
    static let projectionGenerationKey = "projectionGeneration"
    /// Meta key of the projections' layout: 2 since challenges, OTPs and grants have indexes
    /// (`RecordKind`) and the states hold live ones only. Written with the first event.
    static let projectionLayoutKey = "projectionLayout"
    /// 3 since user states carry their stream's hash (section 14): a layout 2 store gets
    /// them on open (`buildStreamHashesOnOpen`), an older one is rebuilt.
    static let projectionLayout: [UInt8] = [3]
    static let layoutWithoutStreamHashes: [UInt8] = [2]

    struct ReplayPartition: Sendable {
        var states: [(String, [UInt8])]
        var records: [(RecordKind, String, String, [UInt8])]
        var system: SystemState
        var userEvents: UInt64
    }

    /// Folds the events with `seq <= through` of the users that hash to `part`. With
    /// `storedLeaves`, a stream's hash folds the leaf hash the stored tree holds for each
    /// event instead of computing it again from the event (the tree's check, beside the
    /// partitions, computes every leaf once and compares it with the stored one; when that
    /// check fails the caller folds again without them).
    static func replayPartition(_ r: any StorageReader, part: Int, of parts: Int, through: UInt64, storedLeaves: Bool = false,
                                progress: ((UInt64, UInt64) -> Void)?) throws -> ReplayPartition {
        var fold = PartitionFold(part: part, parts: parts)
        if storedLeaves { fold.tree = r }
        try r.scan(from: 1) { seq, bytes in
            guard seq <= through else { return false }
            if seq % 65_536 == 0 { progress?(seq, through) }
            try fold.fold(seq, bytes) { try r.storedEvent($0, $1).event }
            return true
        }
        return fold.result()
    }

    /// One partition's fold: the events of the users that hash to `part`, and every
    /// system event (the policy applies to all users).
    struct PartitionFold {
        let part: Int
        let parts: Int
        /// Each user's state and stream hash, under one key (one lookup an event).
        var users: [String: Folded] = [:]
        var leaves = StoredLeaf()
        var system = SystemState()
        var n: UInt64 = 0
        /// Where the stored leaf hashes are read from, when they are trusted (see `replayPartition`).
        var tree: (any StorageReader)?

        struct Folded {
            var state: UserState
            var stream = StreamFold()
            init(_ user: String) { state = UserState(user: user) }
        }

        init(part: Int, parts: Int) {
            self.part = part
            self.parts = parts
        }

        /// The stored tree hashes a run of the log brought (`LogBatch.tree`, all of them):
        /// those of stored indexes `from…`, 32 bytes each.
        struct RunTree {
            let hashes: UnsafeRawBufferPointer
            let from: UInt64
        }

        /// Folds the stored event at `seq` when it is this partition's; `decode` gives the
        /// event with its personal values. With `run`, a stream's hash folds the stored leaf
        /// hash the run brought (trusted as `tree`'s are).
        mutating func fold(_ seq: UInt64, _ bytes: UnsafeRawBufferPointer, run: RunTree? = nil,
                           _ decode: (UInt64, UnsafeRawBufferPointer) throws -> Event) throws {
            guard let owner = EventCodec.streamHash(bytes) else {
                throw LedgerError(.tampered, "stored event is not decodable", seq: seq)
            }
            let isSystem = owner == 0
            if !isSystem && parts > 1 && Int(owner % UInt64(parts)) != part { return }
            let e = try decode(seq, bytes)
            if let user = e.user {
                let policy = system.policy
                if let run {
                    let index = MerkleTree.storedHashIndex(level: 0, seq - 1)
                    guard index >= run.from, index - run.from < UInt64(run.hashes.count / 32) else {
                        throw LedgerError(.tampered, "stored leaf hash missing", seq: seq)
                    }
                    let at = 32 * Int(index - run.from)
                    try users[user, default: Folded(user)].add(e, policy: policy, leaf: UnsafeRawBufferPointer(rebasing: run.hashes[at..<(at + 32)]), seq: seq)
                } else if let tree {
                    try tree.withTreeHash(MerkleTree.storedHashIndex(level: 0, seq - 1)) { leaf in
                        guard let leaf, leaf.count == 32 else { throw LedgerError(.tampered, "stored leaf hash missing", seq: seq) }
                        try users[user, default: Folded(user)].add(e, policy: policy, leaf: leaf, seq: seq)
                    }
                } else {
                    let leaf = try leaves.leafOrDecode(bytes, seq: seq)
                    try leaf.withUnsafeBytes { leaf in try users[user, default: Folded(user)].add(e, policy: policy, leaf: leaf, seq: seq) }
                }
                n += 1
            } else {
                try system.evolve(e)
            }
        }

        /// The encoded states and records; each state is freed as soon as it is encoded,
        /// so the two never coexist in full.
        mutating func result() -> ReplayPartition {
            var states: [(String, [UInt8])] = []
            var records: [(RecordKind, String, String, [UInt8])] = []
            states.reserveCapacity(users.count)
            while let (user, f) = users.popFirst() {
                states.append((user, StateCodec.encode(f.state.compacted(), stream: f.stream.head)))
                for (kind, id, bytes) in f.state.encodedRecords() { records.append((kind, user, id, bytes)) }
            }
            return ReplayPartition(states: states, records: records, system: system, userEvents: n)
        }
    }
}

extension Ledger.PartitionFold.Folded {
    /// One more event of the user: the state evolved, the stream's hash over its leaf hash.
    mutating func add(_ e: Event, policy: Policy, leaf: UnsafeRawBufferPointer, seq: UInt64) throws {
        try state.evolve(e, policy: policy)
        stream.add(leafBytes: leaf, seq: seq)
    }
}
