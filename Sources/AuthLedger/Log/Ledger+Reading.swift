import AuthLedgerCore
import Foundation

extension Ledger {
    // MARK: Reads

    /// Runs `body` once in one consistent snapshot, after what it reads was loaded (`load`,
    /// then what `then` names over that), without blocking the calling thread on another
    /// thread's I/O (see `StorageBackend.readAsync`): the async reads' one way in. `load` is
    /// evaluated only by a store that loads (PostgreSQL): LMDB reads in place, so a load that
    /// costs work to name (a tree read's dry run) costs it nothing.
    /// (`then` is not escaping, so a query pays no closure allocation on LMDB, which never
    /// calls it; its default names nothing more.)
    func read<T: Sendable>(_ load: @autoclosure () -> ReadLoad = ReadLoad(), then: (any StorageReader) throws -> ReadLoad = { _ in ReadLoad() },
                           _ body: (any StorageReader) throws -> T) async throws -> T {
        try await storage.readAsync(load, then: then, body)
    }

    // MARK: Reading the log

    /// Visits recorded events with `seq >= from` (optionally of one user) until `body` returns
    /// false, in one consistent snapshot (whole-log work: an export, the CLI). LMDB walks its
    /// pages in place; PostgreSQL reads the log in runs, each awaited while the next is on its
    /// way (`AsyncBatchScanning.scanRuns`), and one user's stream in one load: no thread
    /// waits for the store.
    public func forEachEvent(from: UInt64 = 1, user: String? = nil, through: UInt64 = .max,
                             _ body: (RecordedEvent) throws -> Bool) async throws {
        guard user == nil, let scanning = storage as? AsyncBatchScanning else {
            return try await read(ReadLoad(streams: user.map { [$0] } ?? [])) { r in
                try Ledger.forEachEvent(r, from: from, user: user, through: through, body)
            }
        }
        let last = min(through, try await head().seq)
        guard max(from, 1) <= last else { return }
        var failure: (any Error)?
        try await scanning.scanRuns(from: from, through: last, run: Ledger.replayRun, start: { _ in }) { batch in
            var more = true
            do {
                try batch.forEach { seq, bytes, personal in
                    guard more else { return }
                    var e = try EventCodec.decode(bytes, seq: seq)
                    if e.event.personal != nil, e.event.user != nil, let personal { try PersonalCodec.disclose(personal, into: &e.event, seq: seq) }
                    more = try body(e)
                }
            } catch {
                failure = error
                return false
            }
            return more
        }
        if let failure { throw failure }
    }

    static func forEachEvent(_ r: any StorageReader, from: UInt64, user: String?, through: UInt64,
                             _ body: (RecordedEvent) throws -> Bool) throws {
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

    /// Recorded events with `seq >= from`, at most `limit`, optionally filtered.
    public func events(from: UInt64 = 1, limit: Int = .max, user: String? = nil, types: Set<EventType>? = nil) async throws -> [RecordedEvent] {
        var load = ReadLoad()
        if let user { load.streams = [user] } else { load.log = [(max(from, 1), types == nil ? max(limit, 1) : .max)] }
        return try await read(load) { r in try Ledger.events(r, from: from, limit: limit, user: user, types: types) }
    }

    static func events(_ r: any StorageReader, from: UInt64, limit: Int, user: String?, types: Set<EventType>?) throws -> [RecordedEvent] {
        var out: [RecordedEvent] = []
        try Ledger.forEachEvent(r, from: from, user: user, through: .max) { e in
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
    public func state(of user: String, position: UInt64? = nil, asOf: Timestamp, fromScratch: Bool = false) async throws -> (state: UserState, position: UInt64) {
        try await readState(user, position: position, asOf: asOf, fromScratch: fromScratch) { r in
            try Ledger.compactedState(r, of: user, position: position, asOf: asOf, fromScratch: fromScratch)
        }
    }

    /// The state inside one read, in its maintained form (see `state(of:position:asOf:fromScratch:)`).
    static func compactedState(_ r: any StorageReader, of user: String, position: UInt64?, asOf: Timestamp,
                               fromScratch: Bool) throws -> (state: UserState, position: UInt64) {
        let (s, pos, maintained) = try Ledger.state(r, of: user, position: position, asOf: asOf, fromScratch: fromScratch)
        return (maintained ? s : s.compacted(), pos)
    }

    /// The state inside one read, and whether it is the maintained one (true) or a full replay.
    static func state(_ r: any StorageReader, of user: String, position: UInt64?, asOf: Timestamp,
                      fromScratch: Bool) throws -> (state: UserState, position: UInt64, maintained: Bool) {
        let head = try r.head()
        let pos = min(position ?? head.seq, head.seq)
        if let s = try maintainedState(r, of: user, position: pos, asOf: asOf, fromScratch: fromScratch, head: head) { return (s, pos, true) }
        return (try Ledger.replayUser(r, user: user, position: pos, asOf: asOf), pos, false)
    }

    /// The maintained state when it is the answer (at the head, the checkpoint there, no
    /// event of the user or the policy after `asOf`); nil when the stream must be replayed.
    static func maintainedState(_ r: any StorageReader, of user: String, position: UInt64?, asOf: Timestamp,
                                fromScratch: Bool, head: Head? = nil) throws -> UserState? {
        let head = try head ?? r.head()
        guard !fromScratch, min(position ?? head.seq, head.seq) == head.seq, try r.checkpoint() == head.seq else { return nil }
        let system = try r.projectionState(systemStream).map { b in try b.withUnsafeBytes { try StateCodec.decodeSystem($0) } } ?? SystemState()
        guard (system.lastAt ?? .min) <= asOf else { return nil }
        guard let bytes = try r.projectionState(user) else { return UserState(user: user) }
        let s = try bytes.withUnsafeBytes { try StateCodec.decode($0, user: user) }
        return (s.lastAt ?? .min) <= asOf ? s : nil
    }

    /// What `state(_:of:…)` reads first for `users`: their projections and the policy's.
    static func stateLoad(_ users: [String]) -> ReadLoad { ReadLoad(states: [systemStream] + users) }

    /// What it reads next, over what `stateLoad` loaded: the streams of the users whose
    /// maintained state is not the answer under their options, and the policy's stream.
    static func replayLoad(_ r: any StorageReader, _ users: [(user: String, position: UInt64?, asOf: Timestamp, fromScratch: Bool)]) throws -> ReadLoad {
        var load = ReadLoad()
        for u in users where try maintainedState(r, of: u.user, position: u.position, asOf: u.asOf, fromScratch: u.fromScratch) == nil {
            load.streams.append(u.user)
        }
        if !load.streams.isEmpty { load.streams.append(systemStream) }
        return load
    }

    /// A read of `user`'s state under these options (`stateLoad`, then `replayLoad`).
    func readState<T: Sendable>(_ user: String, position: UInt64?, asOf: Timestamp, fromScratch: Bool, also: ReadLoad = ReadLoad(),
                                _ body: (any StorageReader) throws -> T) async throws -> T {
        // Named lazily: LMDB never builds it.
        func load() -> ReadLoad {
            var load = Ledger.stateLoad([user])
            load.records = also.records
            return load
        }
        return try await read(load(), then: { r in try Ledger.replayLoad(r, [(user, position, asOf, fromScratch)]) }, body)
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
    public func policy() async throws -> Policy { try await read(ReadLoad(states: [systemStream]), Ledger.policy) }

    static func policy(_ r: any StorageReader) throws -> Policy {
        try r.projectionState(systemStream).map { b in try b.withUnsafeBytes { try StateCodec.decodeSystem($0) } }?.policy ?? Policy()
    }
}
