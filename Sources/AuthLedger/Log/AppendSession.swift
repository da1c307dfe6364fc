import AuthLedgerCore
import Crypto

/// Appends inside one write transaction. Requests applied through `apply` are
/// isolated from each other: a refused request rolls back only its own writes (a
/// nested transaction) and its own cached state, so group commit can batch many.
/// `finish()` writes the maintained projections and head with their checkpoint, in
/// the same transaction as the events. This file holds the rules' path (`admit`) and the
/// state; the other jobs have a file each: the cache of states and stream heads (`+Cache`),
/// the undo log (`+Undo`), hashing and the tree's frontier (`+Hashing`, the stream heads in
/// `StreamHashes.swift`), sealing (`+Sealing`), erasure (`+Erasure`), isolation (`+Isolated`).
final class AppendSession {
    let w: any StorageWriter
    var head: Head
    var users: [String: UserState] = [:]
    var dirtyUsers: Set<String> = []
    var system: SystemState?
    var systemDirty = false
    // Undo log of the current request: the cached value before its first change.
    var undoUsers: [String: UserState?] = [:]
    var undoSystem: SystemState??
    var inRequest = false
    /// The writer's switches (sealing personal values, the Merkle tree): all on but in benchmark baselines.
    var switches = AppendSwitches()
    /// One buffer for every event's canonical bytes and stored bytes (no array per event).
    var scratch: [UInt8] = []
    /// The Merkle tree's right edge (loaded at the first append), and its value when the request began.
    var tree: TreeFrontier?
    var savedTree: TreeFrontier?
    /// The writer's second thread for a large request's hashes (nil: everything inline).
    var hashing: HashPipeline?
    /// Whether the current request's events go through `hashing`, and the ids of those
    /// submitted and not yet stored (a duplicate among them waits for them).
    var pipelining = false
    var pendingIds: Set<EventID> = []
    /// Admitted events not yet handed to `hashing`.
    var outbox: [HashPipeline.Job] = []
    /// The user events stored in this transaction, in seq order, and the stream heads known
    /// (loaded with their states, then folded by `finish`): `StreamHashes.swift`.
    var streamLeaves: [(user: String, step: StreamStep)] = []
    var streams: [String: StreamHead] = [:]
    var savedLeaves = 0
    /// Whether `hashing` folds the current request's leaves into their streams' heads too;
    /// the heads of the streams loaded meanwhile (handed over with the next events, put in
    /// `streams` after the request: `streams` is not changed while `hashing` reads it).
    var foldsInPipeline = false
    var loadedHeads: [(String, StreamHead?)] = []
    var handedHeads = 0

    init(_ w: any StorageWriter) throws {
        self.w = w
        head = try w.head()
        startSeq = head.seq
    }

    /// The head when the session began: a session that starts the log marks its layout.
    let startSeq: UInt64

    /// The head and the dirty sets when the request began (`+Undo`).
    var savedHead = Head.empty
    var savedDirty: (Set<String>, Bool) = ([], false)

    /// Applies without a savepoint: the caller aborts the whole transaction on failure.
    func applyUnisolated(_ request: AppendRequest) throws -> (appended: [RecordedEvent], duplicates: Int) {
        appended = []
        appended.reserveCapacity(request.inputs.count)
        defer { appended = [] }
        var duplicates = 0
        var checkedVersions: Set<String> = []
        for stream in request.expectedVersions.keys { try AppendRequest.checkStreamKey(stream) }
        try beginPipeline(request)
        defer { endPipeline() }
        for (index, input) in request.inputs.enumerated() {
            do {
                if try !admit(input, expectedVersions: request.expectedVersions, checked: &checkedVersions) {
                    duplicates += 1
                }
            } catch var e as LedgerError {
                e.index = index
                throw e
            }
        }
        try storeHashed(all: true)
        takePipelineEdges()
        // Expected versions for streams the request did not touch still have to hold.
        for (stream, expected) in request.expectedVersions where !checkedVersions.contains(stream) {
            let current = stream == systemStream ? try systemState().version : try userState(stream).version
            if current != expected {
                throw LedgerError(.versionConflict, "stream \(stream) is at version \(current), not \(expected)")
            }
        }
        return (appended, duplicates)
    }

    /// The request's events recorded so far, in order.
    var appended: [RecordedEvent] = []

    /// Validates `input` against the rules and stores it, hashed inline; nil when it is an
    /// identical duplicate (commands and erasure, one event at a time).
    func append(_ input: EventInput, expectedVersions: [String: UInt64] = [:], checked: inout Set<String>) throws -> RecordedEvent? {
        precondition(!pipelining, "an event appended inside a pipelined request")
        appended = []
        defer { appended = [] }
        return try admit(input, expectedVersions: expectedVersions, checked: &checked) ? appended.last : nil
    }

    /// Validates `input` against the rules and stores it (or hands it to `hashing`, which
    /// `storeHashed` takes back in order); false when it is an identical duplicate.
    private func admit(_ input: EventInput, expectedVersions: [String: UInt64], checked: inout Set<String>) throws -> Bool {
        var event = input.event
        guard event.at.isWithinEventRange else {
            throw LedgerError.invalid("\"at\" must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z", field: "at")
        }
        // What follows reads the log (an earlier event of this request) or the head's hash:
        // the events handed to `hashing` are stored first.
        if let id = event.id, pendingIds.contains(id) { try storeHashed(all: true) }
        if !input.claims.isEmpty || event.type == .userErased { try storeHashed(all: true) }
        if let id = event.id, let existing = try w.seq(forId: id) {
            let old = try w.recordedEvent(at: existing)
            if old.event.sameContent(as: event) { return false }
            throw LedgerError(.duplicateEventId, "event id \(id) is already in the log (seq \(existing)) with other content", field: "id")
        }
        if event.id == nil { event.id = .random() }
        // Personal values get their salted commitments (SPEC 1.5): the leaf hashes those,
        // the event's bytes keep only the digests, the values and salts go to the values store.
        // In a large request, fresh salts are drawn and hashed on the hashing thread
        // (`HashPipeline.Job.seal`): only disclosures can make sealing fail, and the rules
        // read only the commitments of erased values, which came with the input.
        let sealLater = try seal(&event, input)
        let stream = event.stream
        let seq = head.seq + 1
        // Recorded-form claims are checked before the rules: an edited export (a line
        // changed, dropped or moved) is `chain_mismatch` (SPEC 1.2), not whichever rule
        // the edit happens to break next.
        let claims = input.claims
        if !claims.isEmpty {
            let current = event.user == nil ? try systemState().version : try userState(stream).version
            try checkClaims(claims, event, seq: seq, version: current + 1)
        }
        let version: UInt64
        if event.user == nil {
            var s = try systemState()
            try checkExpected(stream, s.version, expectedVersions, &checked)
            try s.evolve(event)
            version = s.version
            setSystem(s)
        } else {
            // Evolve the cached state in place, through one `inout` access: reading
            // `users[stream]!.x` copies the whole state out (a retain per field) each time.
            let policy = try systemState().policy
            let w = self.w
            let undo = inRequest && undoUsers.index(forKey: stream) == nil  // (comparing undoUsers[stream] with nil copied the state out)
            version = try withUser(stream) { state in
                try checkExpected(stream, state.version, expectedVersions, &checked)
                // The state before the request's first change (a refused request restores it).
                if undo { undoUsers[stream] = .some(state) }
                // The records the event names come from their indexes (the state keeps live ones
                // only); what it changes goes back there, and what is settled leaves the state.
                let records = UserState.recordIds(of: event)
                for (kind, id) in records where !state.hasRecord(kind, id) {
                    guard let bytes = try w.record(kind, user: stream, id: id) else { continue }
                    do { try state.load(kind, bytes) } catch {
                        throw LedgerError(.tampered, "a stored \(kind) record of \(stream) is not decodable")
                    }
                }
                let supersededOtp = state.latestOtpId
                try state.evolve(event, policy: policy)
                for (kind, id) in records {
                    if let bytes = state.encodedRecord(kind, id) { try w.putRecord(kind, user: stream, id: id, bytes) }
                }
                state.evict(supersededOtp.map { records + [(.otp, $0)] } ?? records)
                return state.version
            }
            dirtyUsers.insert(stream)
        }
        if let user = event.user {
            // A pipelined event's values come back with its hashes (`storeHashed`).
            if !pipelining, let values = PersonalCodec.encode(event) { try w.putPersonalValues(user: user, seq: seq, values) }
            if event.type == .userErased { try erase(user, before: seq) }
        }
        if pipelining {
            outbox.append(HashPipeline.Job(event: event, seq: seq, version: version, seal: sealLater))
            pendingIds.insert(event.id!)
            // The head's hash follows when the events are stored (`storeHashed`).
            head = Head(seq: seq, hash: head.hash)
            // Handed over and taken back a few at a time: a lock round per event would cost more than the hashing.
            if outbox.count == HashPipeline.handOver {
                handOver()
                try storeHashed(all: false)
            }
            return true
        }
        // One leaf for the chain and the Merkle tree (SPEC 6: the same leaves).
        let leaf = TreeFrontier.Node.leaf(event, seq: seq, version: version, scratch: &scratch)
        let hash = TreeFrontier.Node.chain(prev: head.hash, leaf: leaf)
        let recorded = RecordedEvent(event: event, seq: seq, version: version, prev: head.hash, hash: hash)
        EventCodec.encode(recorded, into: &scratch)
        try store(recorded, bytes: scratch, leaf: leaf) { try appendToTree(leaf, seq: seq) }
        head = Head(seq: seq, hash: hash)
        return true
    }

    /// `seq`, `version`, `prev` and `hash` of a recorded-form input must be what the ledger computes.
    private func checkClaims(_ claims: RecordedClaims, _ event: Event, seq: UInt64, version: UInt64) throws {
        if let c = claims.seq, c != seq { throw LedgerError(.chainMismatch, "seq \(c) where the ledger assigns \(seq)", field: "seq", seq: seq) }
        if let c = claims.version, c != version { throw LedgerError(.chainMismatch, "version \(c) where the ledger assigns \(version)", field: "version", seq: seq) }
        if let c = claims.prev, c != head.hash { throw LedgerError(.chainMismatch, "prev does not match the head hash", field: "prev", seq: seq) }
        if let c = claims.hash, c != RecordedEvent.computeHash(event, seq: seq, version: version, prev: head.hash) {
            throw LedgerError(.chainMismatch, "hash does not match the computed hash", field: "hash", seq: seq)
        }
    }

    private func checkExpected(_ stream: String, _ current: UInt64, _ expected: [String: UInt64], _ checked: inout Set<String>) throws {
        guard let want = expected[stream], checked.insert(stream).inserted else { return }
        if current != want {
            throw LedgerError(.versionConflict, "stream \(stream) is at version \(current), not \(want)")
        }
    }

    /// Writes maintained projections, head and checkpoint (same transaction as the events).
    func finish() throws {
        let hashing = switches.maintainStreamHashes.load(ordering: .relaxed)
        // Without stream hashes (a bench's ablation) the heads are not kept current: none
        // may be cached past this transaction.
        if hashing { try foldStreamLeaves() } else { streams = [:] }
        for user in dirtyUsers { try w.putProjectionState(user, StateCodec.encode(users[user]!, stream: hashing ? streams[user] : nil)) }
        if systemDirty, let s = system { try w.putProjectionState(systemStream, StateCodec.encode(s)) }
        try w.setHead(head)
        try w.setCheckpoint(head.seq)
        if startSeq == 0 && head.seq > 0 { try w.putMetaValue(Ledger.projectionLayoutKey, Ledger.projectionLayout) }
        dirtyUsers = []
        systemDirty = false
    }
}
