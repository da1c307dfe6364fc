import AuthLedgerCore
import Crypto

/// Appends inside one write transaction. Requests applied through `apply` are
/// isolated from each other: a refused request rolls back only its own writes (a
/// nested transaction) and its own cached state, so group commit can batch many.
/// `finish()` writes the maintained projections and head with their checkpoint, in
/// the same transaction as the events.
final class AppendSession {
    let w: any StorageWriter
    private(set) var head: Head
    private(set) var users: [String: UserState] = [:]
    private var dirtyUsers: Set<String> = []
    private(set) var system: SystemState?
    private var systemDirty = false
    // Undo log of the current request: the cached value before its first change.
    private var undoUsers: [String: UserState?] = [:]
    private var undoSystem: SystemState??
    private var inRequest = false
    /// The writer's switches (sealing personal values, the Merkle tree): all on but in benchmark baselines.
    var switches = AppendSwitches()
    /// One buffer for every event's canonical bytes and stored bytes (no array per event).
    private var scratch: [UInt8] = []
    /// The Merkle tree's right edge (loaded at the first append), and its value when the request began.
    private var tree: TreeFrontier?
    private var savedTree: TreeFrontier?
    /// The writer's second thread for a large request's hashes (nil: everything inline).
    var hashing: HashPipeline?
    /// Whether the current request's events go through `hashing`, and the ids of those
    /// submitted and not yet stored (a duplicate among them waits for them).
    private var pipelining = false
    private var pendingIds: Set<EventID> = []
    /// Admitted events not yet handed to `hashing`.
    private var outbox: [HashPipeline.Job] = []
    /// The user events stored in this transaction, in seq order, and the stream heads known
    /// (loaded with their states, then folded by `finish`): `StreamHashes.swift`.
    var streamLeaves: [(user: String, step: StreamStep)] = []
    var streams: [String: StreamHead] = [:]
    private var savedLeaves = 0
    /// Whether `hashing` folds the current request's leaves into their streams' heads too;
    /// the heads of the streams loaded meanwhile (handed over with the next events, put in
    /// `streams` after the request: `streams` is not changed while `hashing` reads it).
    private var foldsInPipeline = false
    private var loadedHeads: [(String, StreamHead?)] = []
    private var handedHeads = 0

    init(_ w: any StorageWriter) throws {
        self.w = w
        head = try w.head()
        startSeq = head.seq
    }

    /// The head when the session began: a session that starts the log marks its layout.
    private let startSeq: UInt64

    /// Starts from states cached by the previous transaction of this writer. Only
    /// valid when nothing was committed since (the caller compares heads): the cache
    /// then equals the stored projections, and saves decoding them again.
    func adopt(users cached: inout [String: UserState], streams cachedStreams: inout [String: StreamHead], system cachedSystem: SystemState?) {
        swap(&users, &cached)
        swap(&streams, &cachedStreams)
        system = cachedSystem
    }

    func userState(_ user: String) throws -> UserState {
        try loadUser(user)
        return users[user]!
    }

    /// Makes sure the user's state is cached, without copying it out (a copy
    /// retains every string and dictionary of the state); returns where it is.
    @discardableResult
    private func loadUser(_ user: String) throws -> [String: UserState].Index {
        if let i = users.index(forKey: user) { return i }
        let bytes = try w.projectionState(user)
        users[user] = try bytes.map { bytes in
            try bytes.withUnsafeBytes { try StateCodec.decode($0, user: user) }
        } ?? UserState(user: user)
        let head = try bytes.map { b in try b.withUnsafeBytes { try StateCodec.decodeStream($0).head } } ?? .start
        if foldsInPipeline { loadedHeads.append((user, head)) } else { streams[user] = head }
        return users.index(forKey: user)!
    }

    /// Runs `body` on the cached state of `user` (loaded), in place: through the
    /// dictionary's values at the state's index, the state is neither copied nor moved out.
    private func withUser<T>(_ user: String, _ body: (inout UserState) throws -> T) throws -> T {
        let i = try loadUser(user)
        return try body(&users.values[i])
    }

    func systemState() throws -> SystemState {
        if let s = system { return s }
        let s = try w.projectionState(systemStream).map { b in try b.withUnsafeBytes { try StateCodec.decodeSystem($0) } } ?? SystemState()
        system = s
        return s
    }

    private func setSystem(_ s: SystemState) {
        if inRequest && undoSystem == nil { undoSystem = .some(system) }
        system = s
        systemDirty = true
    }

    private var savedHead = Head.empty
    private var savedDirty: (Set<String>, Bool) = ([], false)

    /// Marks the start of a request whose cached changes may have to be undone.
    func beginRequest() throws {
        savedHead = head
        savedDirty = (dirtyUsers, systemDirty)
        savedTree = tree
        savedLeaves = streamLeaves.count
        undoUsers = [:]
        undoSystem = nil
        inRequest = true
    }

    /// Ends the request; when it was refused, its cached changes are rolled back
    /// (its writes were in a nested transaction that was aborted).
    func endRequest(committed: Bool) {
        if !committed {
            for (user, old) in undoUsers { users[user] = old }
            if let old = undoSystem { system = old }
            head = savedHead
            tree = savedTree
            streamLeaves.removeSubrange(savedLeaves...)
            (dirtyUsers, systemDirty) = savedDirty
        }
        undoUsers = [:]
        undoSystem = nil
        inRequest = false
    }

    /// Applies without a savepoint: the caller aborts the whole transaction on failure.
    func applyUnisolated(_ request: AppendRequest) throws -> (appended: [RecordedEvent], duplicates: Int) {
        appended = []
        appended.reserveCapacity(request.inputs.count)
        defer { appended = [] }
        var duplicates = 0
        var checkedVersions: Set<String> = []
        for stream in request.expectedVersions.keys { try AppendRequest.checkStreamKey(stream) }
        // (Recorded-form inputs are checked against the head's hash, event by event: inline.)
        if let hashing, request.inputs.count >= HashPipeline.minimumEvents, request.inputs.allSatisfy({ $0.claims.isEmpty }) {
            // The tree's nodes are hashed there too, from the edge at the head.
            let edge = switches.maintainMerkleTree.load(ordering: .relaxed) ? try treeAtHead() : nil
            // The stream heads are folded there too, from the heads with every earlier step
            // folded in (only steps of earlier requests: this one's could still be undone).
            let folds = switches.maintainStreamHashes.load(ordering: .relaxed) && (!inRequest || streamLeaves.count == savedLeaves)
            if folds {
                try foldStreamLeaves()
                savedLeaves = 0
            }
            pipelining = hashing.begin(prev: head.hash, tree: edge, streams: folds ? streams : nil)
            foldsInPipeline = pipelining && folds
        }
        defer {
            if pipelining { hashing?.cancel() }
            pipelining = false
            pendingIds = []
            outbox = []
            if foldsInPipeline {
                foldsInPipeline = false
                for (user, head) in loadedHeads { streams[user] = head }
                loadedHeads = []
                handedHeads = 0
            }
        }
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
        if pipelining, tree != nil { tree = hashing!.frontier }
        if foldsInPipeline { streamLeaves += hashing!.takeStreamSteps() }
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
    private var appended: [RecordedEvent] = []

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
        var sealLater = false
        if switches.sealPersonalData.load(ordering: .relaxed) {
            if pipelining && input.disclosures == nil && input.claims.isEmpty {
                sealLater = true
            } else {
                try PersonalData.seal(&event, disclosures: input.disclosures)
            }
        } else if input.disclosures != nil || event.personal != nil {
            throw LedgerError.invalid("this ledger does not take commitments", field: "disclosures")
        }
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
        let leaf = RecordedEvent.leaf(event, seq: seq, version: version, scratch: &scratch)
        let hash = RecordedEvent.chain(prev: head.hash, leaf: leaf)
        let recorded = RecordedEvent(event: event, seq: seq, version: version, prev: head.hash, hash: hash)
        EventCodec.encode(recorded, into: &scratch)
        try store(recorded, bytes: scratch, leaf: leaf) { try appendToTree(leaf, seq: seq) }
        head = Head(seq: seq, hash: hash)
        return true
    }

    /// Puts a recorded event and its index entries, then its Merkle nodes (`tree`).
    private func store(_ recorded: RecordedEvent, bytes: [UInt8], leaf: SHA256.Digest, tree: () throws -> Void) throws {
        let e = recorded.event
        try w.putEvent(seq: recorded.seq, id: e.id!, stream: e.stream, version: recorded.version, bytes: bytes)
        try tree()
        if let user = e.user, !foldsInPipeline, switches.maintainStreamHashes.load(ordering: .relaxed) {
            streamLeaves.append((user, .leaf(seq: recorded.seq, leaf)))
        }
        appended.append(recorded)
    }

    /// Gives `hashing` the admitted events not yet handed over.
    private func handOver() {
        guard !outbox.isEmpty else { return }
        hashing!.submit(outbox, heads: Array(loadedHeads[handedHeads...]))
        handedHeads = loadedHeads.count
        outbox.removeAll(keepingCapacity: true)
    }

    /// Stores what `hashing` has hashed (with `all`, every event handed to it), in `seq`
    /// order; once nothing is pending, the head has the last one's hash.
    private func storeHashed(all: Bool) throws {
        guard pipelining, all || !pendingIds.isEmpty else { return }
        if all { handOver() }
        let taken = hashing!.take(all: all)
        var k = 0
        for h in taken.events {
            if let values = h.values, let user = h.recorded.event.user {
                try w.putPersonalValues(user: user, seq: h.recorded.seq, values)
            }
            try store(h.recorded, bytes: h.bytes, leaf: h.leaf) {
                for (index, node) in taken.nodes[k..<(k + h.nodeCount)] { try w.appendTreeHash(index, node) }
            }
            k += h.nodeCount
            pendingIds.remove(h.recorded.event.id!)
            if pendingIds.isEmpty { head = Head(seq: h.recorded.seq, hash: h.recorded.hash) }
        }
    }

    /// Adds the event's leaf to the Merkle tree, in the event's transaction.
    private func appendToTree(_ leaf: SHA256.Digest, seq: UInt64) throws {
        if !switches.maintainMerkleTree.load(ordering: .relaxed) { return }
        _ = try treeAtHead()
        try tree!.append(leaf) { index, _, node in try w.appendTreeHash(index, node) }
    }

    /// The Merkle tree's right edge over the events stored so far (loaded the first time).
    private func treeAtHead() throws -> TreeFrontier {
        let size = head.seq
        if tree == nil { tree = try TreeFrontier.load(w, size: size) }
        guard tree!.size == size else { throw LedgerError(.tampered, "the Merkle tree is not at the head", seq: size + 1) }
        return tree!
    }

    /// Destroys the personal values of `user`'s events before `seq` (SPEC 1.5), and the
    /// copies kept in the challenge and OTP indexes (contexts, targets).
    private func erase(_ user: String, before seq: UInt64) throws {
        // The challenge and OTP records those events issued (each names its own once).
        let issued = try w.erasePersonalValues(user: user, before: seq).compactMap { s -> (RecordKind, String)? in
            let e = try w.withEventBytes(s) { b -> Event? in try b.map { try EventCodec.decode($0, seq: s).event } }
            switch e?.type {
            case .challengeIssued?: return e!.data.string(.challengeId).map { (.challenge, $0) }
            case .otpIssued?: return e!.data.string(.otpId).map { (.otp, $0) }
            default: return nil
            }
        }
        for (kind, id) in issued {
            guard let bytes = try w.record(kind, user: user, id: id) else { continue }
            let scrubbed = kind == .challenge
                ? RecordCodec.encode(PersonalData.scrubbed(try RecordCodec.decodeChallenge(bytes)))
                : RecordCodec.encode(PersonalData.scrubbed(try RecordCodec.decodeOTP(bytes)))
            try w.putRecord(kind, user: user, id: id, scrubbed)
        }
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
