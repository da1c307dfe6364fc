/// The result of one append request.
public struct AppendOutcome: Sendable {
    /// The events this request appended, in order.
    public var appended: [RecordedEvent]
    /// Events skipped because an identical event with the same id is already in the log.
    public var duplicates: Int
    /// The head after the transaction that carried this request.
    public var head: Head
}

/// One append request: events to validate and append atomically, with optional
/// expected stream versions (optimistic concurrency).
public struct AppendRequest: Sendable {
    public var inputs: [EventInput]
    public var expectedVersions: [String: UInt64]
    public init(_ inputs: [EventInput], expectedVersions: [String: UInt64] = [:]) {
        self.inputs = inputs
        self.expectedVersions = expectedVersions
    }
}

/// Appends inside one write transaction. Requests applied through `apply` are
/// isolated from each other: a refused request rolls back only its own writes (a
/// nested transaction) and its own cached state, so group commit can batch many.
/// `finish()` writes the maintained projections and head with their checkpoint, in
/// the same transaction as the events.
final class AppendSession {
    let w: any StorageWriter
    private(set) var head: Head
    private var users: [String: UserState] = [:]
    private var dirtyUsers: Set<String> = []
    private var system: SystemState?
    private var systemDirty = false
    // Undo log of the current request: the cached value before its first change.
    private var undoUsers: [String: UserState?] = [:]
    private var undoSystem: SystemState??
    private var inRequest = false

    init(_ w: any StorageWriter) throws {
        self.w = w
        head = try w.head()
    }

    func userState(_ user: String) throws -> UserState {
        if let s = users[user] { return s }
        let s = try w.projectionState(user).map { bytes in
            try bytes.withUnsafeBytes { try StateCodec.decode($0, user: user) }
        } ?? UserState(user: user)
        users[user] = s
        return s
    }

    func systemState() throws -> SystemState {
        if let s = system { return s }
        let s = try w.projectionState(systemStream).map { b in try b.withUnsafeBytes { try StateCodec.decodeSystem($0) } } ?? SystemState()
        system = s
        return s
    }

    private func setUser(_ s: UserState) {
        if inRequest && undoUsers[s.user] == nil { undoUsers[s.user] = .some(users[s.user]) }
        users[s.user] = s
        dirtyUsers.insert(s.user)
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
            (dirtyUsers, systemDirty) = savedDirty
        }
        undoUsers = [:]
        undoSystem = nil
        inRequest = false
    }

    /// Applies without a savepoint: the caller aborts the whole transaction on failure.
    func applyUnisolated(_ request: AppendRequest) throws -> (appended: [RecordedEvent], duplicates: Int) {
        var appended: [RecordedEvent] = []
        appended.reserveCapacity(request.inputs.count)
        var duplicates = 0
        var checkedVersions: Set<String> = []
        for (index, input) in request.inputs.enumerated() {
            do {
                if let r = try append(input, expectedVersions: request.expectedVersions, checked: &checkedVersions) {
                    appended.append(r)
                } else {
                    duplicates += 1
                }
            } catch var e as LedgerError {
                e.index = index
                throw e
            }
        }
        // Expected versions for streams the request did not touch still have to hold.
        for (stream, expected) in request.expectedVersions where !checkedVersions.contains(stream) {
            let current = stream == systemStream ? try systemState().version : try userState(stream).version
            if current != expected {
                throw LedgerError(.versionConflict, "stream \(stream) is at version \(current), not \(expected)")
            }
        }
        return (appended, duplicates)
    }

    /// Validates `input` against the rules and stores it; nil when it is an identical duplicate.
    func append(_ input: EventInput, expectedVersions: [String: UInt64] = [:], checked: inout Set<String>) throws -> RecordedEvent? {
        var event = input.event
        if let id = event.id, let existing = try w.seq(forId: id) {
            let old = try w.withEventBytes(existing) { bytes -> RecordedEvent in
                guard let bytes else { throw LedgerError(.tampered, "id index points at a missing event", seq: existing) }
                return try EventCodec.decode(bytes, seq: existing)
            }
            if old.event.sameContent(as: event) { return nil }
            throw LedgerError(.duplicateEventId, "event id \(id) is already in the log (seq \(existing)) with other content", field: "id")
        }
        if event.id == nil { event.id = .random() }
        let stream = event.stream
        let seq = head.seq + 1
        // Recorded-form claims are checked before the rules: an edited export is a broken
        // chain (`chain_mismatch`) even when the edit also breaks a rule.
        let version = (event.user == nil ? try systemState().version : try userState(stream).version) + 1
        let claims = input.claims
        if let c = claims.seq, c != seq { throw LedgerError(.chainMismatch, "seq \(c) where the ledger assigns \(seq)", field: "seq", seq: seq) }
        if let c = claims.version, c != version { throw LedgerError(.chainMismatch, "version \(c) where the ledger assigns \(version)", field: "version", seq: seq) }
        if let c = claims.prev, c != head.hash { throw LedgerError(.chainMismatch, "prev does not match the head hash", field: "prev", seq: seq) }
        let hash = RecordedEvent.computeHash(event, seq: seq, version: version, prev: head.hash)
        if let c = claims.hash, c != hash { throw LedgerError(.chainMismatch, "hash does not match the computed hash", field: "hash", seq: seq) }
        if event.user == nil {
            var s = try systemState()
            try checkExpected(stream, s.version, expectedVersions, &checked)
            try s.evolve(event)
            precondition(s.version == version)
            setSystem(s)
        } else {
            var s = try userState(stream)
            try checkExpected(stream, s.version, expectedVersions, &checked)
            try s.evolve(event, policy: try systemState().policy)
            precondition(s.version == version)
            setUser(s)
        }
        let recorded = RecordedEvent(event: event, seq: seq, version: version, prev: head.hash, hash: hash)
        try w.putEvent(seq: seq, id: event.id!, stream: stream, version: version, bytes: EventCodec.encode(recorded))
        head = Head(seq: seq, hash: hash)
        return recorded
    }

    private func checkExpected(_ stream: String, _ current: UInt64, _ expected: [String: UInt64], _ checked: inout Set<String>) throws {
        guard let want = expected[stream], checked.insert(stream).inserted else { return }
        if current != want {
            throw LedgerError(.versionConflict, "stream \(stream) is at version \(current), not \(want)")
        }
    }

    /// Writes maintained projections, head and checkpoint (same transaction as the events).
    func finish() throws {
        for user in dirtyUsers { try w.putProjectionState(user, StateCodec.encode(users[user]!)) }
        if systemDirty, let s = system { try w.putProjectionState(systemStream, StateCodec.encode(s)) }
        try w.setHead(head)
        try w.setCheckpoint(head.seq)
        dirtyUsers = []
        systemDirty = false
    }
}
