import AuthLedger
import NIOCore
import PostgresNIO

/// The writes of a PostgreSQL transaction (see `PostgresAccess`): queued and sent in
/// pipelined batches, with savepoints for nested requests.
extension PostgresAccess {
    func putEvent(seq: UInt64, id: EventID, stream: String, version: UInt64, bytes: [UInt8]) throws {
        try write { $0.putEvent(.init(seq: seq, id: id, stream: stream, version: version, bytes: bytes)) }
    }

    /// Moves the head; the statement also notifies the other servers (see `PostgresPendingWrites`).
    func setHead(_ head: Head) throws {
        try write { $0.setHead(head) }
        knownHead = head
    }

    func putProjectionState(_ key: String, _ bytes: [UInt8]) throws {
        if replacing.states != nil { replacing.states![key] = bytes; return }
        try write { $0.states.put(key, bytes) }
    }

    func clearProjectionStates() throws { try clear { $0.states = [:] } }

    func putRecord(_ kind: RecordKind, user: String, id: String, _ bytes: [UInt8]) throws {
        let key = PostgresPendingWrites.RecordKey(kind, user: user, id: id)
        if replacing.records != nil { replacing.records![key] = bytes; return }
        try write { $0.records.put(key, bytes) }
    }

    func clearRecords() throws { try clear { $0.records = [:] } }

    /// Clears a table whose new contents follow (a replay: `start` begins its `PostgresReplacement`).
    private func clear(_ start: (inout PostgresReplacement) -> Void) throws {
        forgetReads()
        try sendWrites()
        start(&replacing)
    }

    func setCheckpoint(_ seq: UInt64) throws {
        try putMetaValue("checkpoint", seq.bigEndianBytes8)
    }

    func putMetaValue(_ key: String, _ bytes: [UInt8]?) throws {
        try write { $0.meta.put(key, bytes) }
    }

    func putPersonalValues(user: String, seq: UInt64, _ bytes: [UInt8]) throws {
        try write { $0.putPersonal(seq: seq, owner: user, bytes) }
    }

    /// The stored records' seqs come from the group's load step (`StorageLoad.erased`, with
    /// their events, which the erasure reads next); the DELETE goes with the layer's other writes (`PostgresPendingWrites.erasePersonal`):
    /// nothing here needs an answer at once. The layers' own rows are dropped; a request's
    /// erasure reaches the group's rows when the request passes.
    func erasePersonalValues(user: String, before: UInt64) throws -> [UInt64] {
        guard let stored = cache.personalOf[user] else { throw cache.notLoaded("the personal values of \(user) to erase") }
        var seqs = Set(stored.filter { $0.seq < before }.map(\.seq))
        if requestPending != nil {
            seqs.formUnion(pending.personal.filter { $0.owner == user && $0.seq < before }.map(\.seq))
            seqs.formUnion(requestPending!.erasePersonal(owner: user, before: before))
        } else {
            seqs.formUnion(pending.erasePersonal(owner: user, before: before))
        }
        // (A load may have kept their values: forgotten; the layers' erasure answers first.)
        for k in seqs { cache.personal[k] = nil }
        return seqs.sorted()
    }

    func appendTreeHash(_ index: UInt64, _ hash: UnsafeRawBufferPointer) throws {
        let bytes = Array(hash)
        try write { $0.putTree(index, bytes) }
        lastAtLevel[MerkleTree.splitStoredHashIndex(index).level] = (index, bytes)
    }

    func clearTree() throws {
        forgetReads()
        treeCleared = true
        lastAtLevel = [:]
        try sendWrites()
        try sendNow(PostgresStatement("DELETE FROM \(t.tiles)", doing: "clear the tree"))
    }

    /// One request of a commit group (see the type's comment): its writes are a layer that
    /// joins the group's when it passes and is dropped when it is refused (behind a real
    /// savepoint, rolled back, once it had to send them early). A savepoint inside a
    /// request's is always a real one, opened after everything before it was sent, and
    /// after the outer request's real one (a refusal of the outer undoes the nested's too).
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        let nested = requestPending != nil
        if nested && !savepointOpen { try openSavepoint() }
        if nested { try sendAll() }
        let outer = (requestPending, savepointOpen, cacheAtSavepoint, knownHead, replacing)
        savepoints += 1
        requestPending = PostgresPendingWrites()
        savepointOpen = false
        defer {
            savepoints -= 1
            (requestPending, savepointOpen, cacheAtSavepoint) = (outer.0, outer.1, outer.2)
        }
        do {
            if nested { try openSavepoint() }
            let result = try body()
            if savepointOpen {
                try sendPending(&requestPending!)
                try sendNow(PostgresStatement("RELEASE SAVEPOINT \(savepointName)", doing: "release savepoint"))
            } else {
                pending.merge(requestPending!)
                if pending.rowCount >= Self.sendEarly { try sendPending(&pending) }
            }
            return result
        } catch {
            (knownHead, replacing) = (outer.3, outer.4)
            // What PostgreSQL holds is again what it held at the savepoint, and so are the reads kept.
            // (Sent without waiting: its answer is collected with the others at the end, and a failure then fails the group.)
            if savepointOpen, let saved = cacheAtSavepoint {
                cache = saved
                try sendNow(PostgresStatement("ROLLBACK TO SAVEPOINT \(savepointName)", doing: "rollback to savepoint"))
            }
            throw error
        }
    }
}
