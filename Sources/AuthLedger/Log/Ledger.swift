import Synchronization
import AuthLedgerCore
import Foundation
import Logging

// @unchecked: its mutable state is guarded by locks (observers, secrets) or owned by the writer thread; the storage backends are Sendable.
/// The device-trust ledger: an append-only, hash-chained log of events with
/// maintained projections, over a storage backend (LMDB by default).
public final class Ledger: @unchecked Sendable {
    /// The store under the log: for the project's tests and benchmark only (SPI), never for a service.
    @_spi(Storage) public let storage: any StorageBackend
    /// How this ledger was opened (key files, origin, replay partitions…).
    public let configuration: Configuration
    /// The directory of the files beside the log (the LMDB store directory unless
    /// configured otherwise; nil for a PostgreSQL store without one).
    public var path: String? { configuration.effectiveKeyDirectory }
    let logger = Logger(label: "authledger.ledger")
    let secretsLock = NSLock()
    var cachedSecrets: OTPSecrets?
    /// The writer thread of this process (group commit for the asynchronous `append` and `perform`).
    let writer: Writer
    private let observersLock = NSLock()
    private var observers: [Int: @Sendable (Head) -> Void] = [:]
    private var nextObserver = 0
    /// The shared notifier and reader of new commits for this ledger's live feeds.
    let feedHub = FeedHub()

    /// Opens the LMDB store at `path` (created 0700 when missing). Maintained
    /// projections that are behind the log (an older format, an interrupted rebuild)
    /// are rebuilt before the ledger is handed out.
    public convenience init(path: String) throws {
        try self.init(Configuration(store: path))
    }

    /// Opens the store `configuration` names — an LMDB directory or a `postgresql://` URL —
    /// with its settings.
    public convenience init(_ configuration: Configuration) throws {
        let storage: any StorageBackend = configuration.isPostgres
            ? try PostgresStorage(url: configuration.store) : try LMDBStorage(path: configuration.store)
        try self.init(storage: storage, configuration: configuration)
    }

    /// A ledger over `storage`, with the files beside the log in `path` (nil: none).
    @_spi(Storage) public convenience init(storage: any StorageBackend, path: String? = nil) throws {
        try self.init(storage: storage, configuration: Configuration(store: path ?? "", keyDirectory: path))
    }

    /// A ledger over `storage` with `configuration`'s settings (its `store` is not opened:
    /// `storage` is that store).
    @_spi(Storage) public init(storage: any StorageBackend, configuration: Configuration) throws {
        self.storage = storage
        self.configuration = configuration
        self.writer = Writer(storage: storage)
        writer.pipelined = configuration.pipelinedCommit
        writer.didCommit = { [weak self] head in self?.notifyCommit(head) }
        // Several servers on one PostgreSQL store: the others' commits wake this one's feeds.
        (storage as? PostgresStorage)?.listenForCommits { [weak self] head in self?.notifyCommit(head) }
        let (head, checkpoint, layout) = try storage.read { r in
            (try r.head(), try r.checkpoint(), try r.metaValue(Ledger.projectionLayoutKey))
        }
        if head.seq != checkpoint {
            logger.notice("projections behind the log; rebuilding", metadata: ["head": "\(head.seq)", "checkpoint": "\(checkpoint)"])
            _ = try replay()
        } else if head.seq > 0 && layout != Ledger.projectionLayout {
            // A store written before challenges, OTPs and grants had their own indexes
            // (replay rebuilds the Merkle tree too).
            logger.notice("projections in an older layout; rebuilding", metadata: ["head": "\(head.seq)"])
            _ = try replay()
        } else {
            try ensureTree()
        }
        try finishPendingPurge()
        feedHub.attach(self)
        _ = addCommitObserver { [commits = feedHub.commits] _ in commits.ring() }
    }

    deinit { writer.stop() }

    // MARK: Commit observers

    /// Registers `f` to be called (on the writer thread for this instance's writes) with the new head after
    /// every commit made through this `Ledger` instance. Other processes' commits are
    /// not observed: poll `head()` for those.
    public func addCommitObserver(_ f: @escaping @Sendable (Head) -> Void) -> Int {
        observersLock.lock()
        defer { observersLock.unlock() }
        nextObserver += 1
        observers[nextObserver] = f
        return nextObserver
    }

    /// Stops calling the observer `addCommitObserver` returned `id` for.
    public func removeCommitObserver(_ id: Int) {
        observersLock.lock()
        observers[id] = nil
        observersLock.unlock()
    }

    func notifyCommit(_ head: Head? = nil) {
        observersLock.lock()
        let fs = Array(observers.values)
        observersLock.unlock()
        guard !fs.isEmpty, let h = head ?? (try? self.head()) else { return }
        for f in fs { f(h) }
    }

    // MARK: Appending

    /// Appends `request` as ``append(_:expectedVersions:)`` does: the synchronous form of the
    /// awaited `append(_:)`, in a transaction of its own on the writer thread; returns after
    /// the durable commit.
    public func append(_ request: AppendRequest) throws -> AppendOutcome {
        try append(request.inputs, expectedVersions: request.expectedVersions)
    }

    /// Validates `inputs` against the rules and appends them atomically (all or none), on the
    /// writer thread in a transaction of its own; returns after the durable commit.
    /// Identical re-appends (same id, same content) are skipped and counted.
    public func append(_ inputs: [EventInput], expectedVersions: [String: UInt64] = [:]) throws -> AppendOutcome {
        try writer.exclusive { [self] in
            let outcome = try storage.write { w in
                let session = try AppendSession(w)
                session.sealPersonalData = writer.sealPersonalData
                let (appended, duplicates) = try session.applyUnisolated(AppendRequest(inputs, expectedVersions: expectedVersions))
                try session.finish()
                return AppendOutcome(appended: appended, duplicates: duplicates, head: session.head)
            }
            if !outcome.appended.isEmpty { notifyCommit(outcome.head) }
            return outcome
        }
    }

    /// The log's head: its last `seq` and that event's chain hash.
    public func head() throws -> Head { try storage.read { try $0.head() } }

    /// Whether the group-commit writer pipelines durable commits (see `Writer.pipelined`):
    /// off by default (``Configuration/pipelinedCommit``); the benchmark
    /// measures both in one run.
    @_spi(Benchmark) public var pipelinesCommits: Bool {
        get { writer.pipelined }
        set { writer.pipelined = newValue }
    }

    /// Whether appends hash salted commitments of personal values (SPEC 1.5), the default.
    /// `false` hashes them in clear, as before commitments existed: only for the
    /// benchmark's same-run comparison, never for a store that must honour erasure.
    @_spi(Benchmark) public var commitsPersonalData: Bool {
        get { writer.sealPersonalData }
        set { writer.sealPersonalData = newValue }
    }

    // MARK: Reading the log

    /// Visits recorded events with `seq >= from` (optionally of one user) until `body` returns false.
    public func forEachEvent(from: UInt64 = 1, user: String? = nil, through: UInt64 = .max,
                             _ body: (RecordedEvent) throws -> Bool) throws {
        try storage.read { r in
            if let user {
                var seqs: [UInt64] = []
                try r.scanStream(user) { _, seq in
                    if seq >= from && seq <= through { seqs.append(seq) }
                    return true
                }
                for seq in seqs {
                    if try !body(try r.recordedEvent(at: seq)) { return }
                }
            } else {
                try r.scan(from: max(from, 1)) { seq, bytes in
                    guard seq <= through else { return false }
                    return try body(try r.recordedEvent(seq, bytes))
                }
            }
        }
    }

    /// Recorded events with `seq >= from`, at most `limit`, optionally filtered.
    public func events(from: UInt64 = 1, limit: Int = .max, user: String? = nil, types: Set<EventType>? = nil) throws -> [RecordedEvent] {
        var out: [RecordedEvent] = []
        try forEachEvent(from: from, user: user) { e in
            if types?.contains(e.event.type) ?? true { out.append(e) }
            return out.count < limit
        }
        return out
    }

    // MARK: Projections

    /// The user's state after the events with `seq <= position` and `at <= asOf`.
    /// Served from the maintained projection when it reflects exactly that, else by
    /// replaying the user's stream (and the policy stream) from scratch.
    ///
    /// Either way the state is in its maintained form: devices, cooling, unresolved
    /// challenges, the latest OTP; settled challenges, older OTPs and grants are in their
    /// indexes (see `UserState.compacted()`; `challenge(_:_:_:)` answers for any of them).
    public func state(of user: String, position: UInt64? = nil, asOf: Timestamp, fromScratch: Bool = false) throws -> (state: UserState, position: UInt64) {
        try storage.read { r in
            let (s, pos, maintained) = try Ledger.state(r, of: user, position: position, asOf: asOf, fromScratch: fromScratch)
            return (maintained ? s : s.compacted(), pos)
        }
    }

    /// The state inside one read, and whether it is the maintained one (true) or a full replay.
    static func state(_ r: any StorageReader, of user: String, position: UInt64?, asOf: Timestamp,
                      fromScratch: Bool) throws -> (state: UserState, position: UInt64, maintained: Bool) {
        let head = try r.head()
        let pos = min(position ?? head.seq, head.seq)
        if !fromScratch, pos == head.seq, try r.checkpoint() == head.seq {
            let system = try r.projectionState(systemStream).map { b in try b.withUnsafeBytes { try StateCodec.decodeSystem($0) } } ?? SystemState()
            if (system.lastAt ?? .min) <= asOf {
                guard let bytes = try r.projectionState(user) else { return (UserState(user: user), pos, true) }
                let s = try bytes.withUnsafeBytes { try StateCodec.decode($0, user: user) }
                if (s.lastAt ?? .min) <= asOf { return (s, pos, true) }
            }
        }
        return (try Ledger.replayUser(r, user: user, position: pos, asOf: asOf), pos, false)
    }

    static func replayUser(_ r: any StorageReader, user: String, position: UInt64, asOf: Timestamp) throws -> UserState {
        var userSeqs: [UInt64] = [], systemSeqs: [UInt64] = []
        try r.scanStream(user) { _, seq in
            guard seq <= position else { return false }
            userSeqs.append(seq)
            return true
        }
        if !userSeqs.isEmpty {
            try r.scanStream(systemStream) { _, seq in
                guard seq < userSeqs.last! else { return false }
                systemSeqs.append(seq)
                return true
            }
        }
        func load(_ seq: UInt64) throws -> RecordedEvent { try r.recordedEvent(at: seq) }
        var state = UserState(user: user)
        var policy = Policy()
        var k = 0
        for seq in userSeqs {
            while k < systemSeqs.count && systemSeqs[k] < seq {
                // The policy in force at an event is the one at its position (SPEC 2.5), whatever
                // the $system stream's own clock says: the as-of filter is on the user's events,
                // and replaying accepted history under another policy could refuse it.
                let p = try load(systemSeqs[k])
                policy.apply(PolicySet(p.event.data))
                k += 1
            }
            let e = try load(seq)
            if e.event.at > asOf { break }
            try state.evolve(e.event, policy: policy)
        }
        return state
    }

    /// The policy in force at the head.
    public func policy() throws -> Policy {
        try storage.read { r in
            try r.projectionState(systemStream).map { b in try b.withUnsafeBytes { try StateCodec.decodeSystem($0) } }?.policy ?? Policy()
        }
    }

    // MARK: Verify and replay

    /// Re-computes every hash and index, and checks that the maintained projections equal
    /// a replay of the log. Throws `tampered` naming the first bad seq (for a projection,
    /// the last seq of its stream).
    @discardableResult
    public func verify() throws -> Head {
        try storage.read { r in
            var prev = Hash32.zero
            var expected: UInt64 = 1
            var versions: [String: UInt64] = [:]
            // Replayed alongside: the maintained projections must equal it (queries at the head answer from them).
            var users: [String: UserState] = [:]
            var system = SystemState()
            var lastSeq: [String: UInt64] = [:]
            var tree = TreeCheck(r)
            try r.scan(from: 0) { seq, bytes in
                guard seq == expected else {
                    throw LedgerError(.tampered, seq < expected ? "unexpected event key" : "event missing", seq: min(seq, expected))
                }
                // Disclosed values must match their commitments (the values store is checked too).
                let rec = try r.recordedEvent(seq, bytes, check: true)
                guard rec.prev == prev else { throw LedgerError(.tampered, "prev does not link to the previous hash", seq: seq) }
                let leaf = RecordedEvent.leaf(rec.event, seq: seq, version: rec.version)
                let hash = RecordedEvent.chain(prev: prev, leaf: leaf)
                guard hash == rec.hash else { throw LedgerError(.tampered, "hash does not match the event's content", seq: seq) }
                try tree.add(leaf, seq: seq)
                let stream = rec.event.stream
                let v = versions[stream, default: 0] + 1
                guard rec.version == v else { throw LedgerError(.tampered, "stream version out of order", seq: seq) }
                versions[stream] = v
                guard try r.seq(forId: rec.id) == seq else { throw LedgerError(.tampered, "id index does not point at this event", seq: seq) }
                guard try r.seq(stream: stream, version: v) == seq else { throw LedgerError(.tampered, "stream index does not point at this event", seq: seq) }
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
                prev = hash
                expected += 1
                return true
            }
            let head = try r.head()
            let last = expected - 1
            guard head.seq == last, head.hash == prev else {
                throw LedgerError(.tampered, "head does not match the last event", seq: min(head.seq, last) + 1)
            }
            try tree.finish()
            let counts = try r.indexCounts()
            guard counts.events == Int(last), counts.ids == Int(last), counts.streams == Int(last) else {
                throw LedgerError(.tampered, "an index holds entries for events not in the log", seq: last + 1)
            }
            if try r.checkpoint() == head.seq {
                var stored = 0
                try r.scanProjectionStates { key, bytes in
                    stored += 1
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

    /// Rebuilds every maintained projection from the log. `progress(done, total)` is
    /// called now and then. Returns the number of events replayed.
    ///
    /// Streams are independent but for the policy, so the rebuild is partitioned by
    /// stream over the cores: every partition scans the log in `seq` order (LMDB
    /// scans at millions of events per second), applies every `policy.set`, and
    /// decodes and folds only its own users' events. The result is the same as a
    /// sequential fold. States are written in the one write transaction, which also
    /// keeps other writers out while the partitions read the same snapshot.
    @discardableResult
    public func replay(progress: ((UInt64, UInt64) -> Void)? = nil) throws -> UInt64 {
        try writer.exclusive { [self] in try replayOnWriter(progress: progress) }
    }

    private func replayOnWriter(progress: ((UInt64, UInt64) -> Void)?) throws -> UInt64 {
        try storage.write { w in
            let head = try w.head()
            try w.clearProjectionStates()
            try w.clearRecords()
            let parts = max(1, min(configuration.replayPartitions ?? ProcessInfo.processInfo.activeProcessorCount, 8))
            let box = ReplayPartitions(parts)
            let storage = self.storage
            let report = progress.map { p in UncheckedSendable(p) }
            let leaves = LeafBuffer()
            DispatchQueue.concurrentPerform(iterations: parts + 1) { part in
                if part == parts {
                    // The Merkle tree's leaves, beside the projections.
                    // nil when the stored tree is intact (the usual case): nothing to rewrite.
                    leaves.result = Result {
                        try storage.read { r in
                            try Ledger.storedTreeMatchesLog(r, through: head.seq) ? nil : try Ledger.leafHashes(r, through: head.seq)
                        }
                    }
                    return
                }
                do {
                    let result = try storage.read { r in
                        try Ledger.replayPartition(r, part: part, of: parts, through: head.seq,
                                                   progress: part == 0 ? report?.value : nil)
                    }
                    box.set(part, .success(result))
                } catch {
                    box.set(part, .failure(error))
                }
            }
            // A partition's refusal (a stored event that does not decode or fold) is reported first.
            for part in 0..<parts { if case let .failure(e)? = box.results[part] { throw e } }
            // The tree next (only when it is not intact), its leaves freed before the states are written.
            if let all = try leaves.result!.get() { try Ledger.rebuildTree(w, leaves: all) }
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
    }

    /// Meta key changed by every rebuild of the projections.
    static let projectionGenerationKey = "projectionGeneration"
    /// Meta key of the projections' layout: 2 since challenges, OTPs and grants have indexes
    /// (`RecordKind`) and the states hold live ones only. Written with the first event.
    static let projectionLayoutKey = "projectionLayout"
    static let projectionLayout: [UInt8] = [2]

    struct ReplayPartition: Sendable {
        var states: [(String, [UInt8])]
        var records: [(RecordKind, String, String, [UInt8])]
        var system: SystemState
        var userEvents: UInt64
    }

    /// Folds the events with `seq <= through` of the users that hash to `part`.
    static func replayPartition(_ r: any StorageReader, part: Int, of parts: Int, through: UInt64,
                                progress: ((UInt64, UInt64) -> Void)?) throws -> ReplayPartition {
        var users: [String: UserState] = [:]
        var system = SystemState()
        var n: UInt64 = 0
        try r.scan(from: 1) { seq, bytes in
            guard seq <= through else { return false }
            if seq % 65_536 == 0 { progress?(seq, through) }
            guard let owner = EventCodec.streamHash(bytes) else {
                throw LedgerError(.tampered, "stored event is not decodable", seq: seq)
            }
            let isSystem = owner == 0
            if !isSystem && parts > 1 && Int(owner % UInt64(parts)) != part { return true }
            let e = try r.storedEvent(seq, bytes).event
            if let user = e.user {
                try users[user, default: UserState(user: user)].evolve(e, policy: system.policy)
                n += 1
            } else {
                try system.evolve(e)
            }
            return true
        }
        var states: [(String, [UInt8])] = []
        var records: [(RecordKind, String, String, [UInt8])] = []
        states.reserveCapacity(users.count)
        // Each state is freed as soon as it is encoded: the two never coexist in full.
        while let (user, s) = users.popFirst() {
            states.append((user, StateCodec.encode(s.compacted())))
            for (kind, id, bytes) in s.encodedRecords() { records.append((kind, user, id, bytes)) }
        }
        return ReplayPartition(states: states, records: records, system: system, userEvents: n)
    }
}
