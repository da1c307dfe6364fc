import AuthLedger
import AuthLedgerCore
import Foundation
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
        try write { $0.putState(key, bytes) }
    }

    /// The table's new contents follow (a replay): see `PostgresReplacement`.
    func clearProjectionStates() throws {
        forgetReads()
        try sendWrites()
        replacing.states = [:]
    }

    func putRecord(_ kind: RecordKind, user: String, id: String, _ bytes: [UInt8]) throws {
        let key = PostgresPendingWrites.RecordKey(kind: Int16(kind.rawValue), owner: kind.owner(user), id: id)
        if replacing.records != nil { replacing.records![key] = bytes; return }
        try write { $0.putRecord(key, bytes) }
    }

    /// The table's new contents follow (a replay): see `PostgresReplacement`.
    func clearRecords() throws {
        forgetReads()
        try sendWrites()
        replacing.records = [:]
    }

    func setCheckpoint(_ seq: UInt64) throws {
        try putMetaValue("checkpoint", seq.bigEndianBytes8)
    }

    func putMetaValue(_ key: String, _ bytes: [UInt8]?) throws {
        try write { $0.putMeta(key, bytes) }
    }

    func putPersonalValues(user: String, seq: UInt64, _ bytes: [UInt8]) throws {
        try write { $0.putPersonal(seq: seq, owner: user, bytes) }
    }

    /// The stored records' seqs come from the group's load step (`StorageLoad.erased`, with
    /// their events, which the erasure reads next); the DELETE goes with the layer's other writes (`PostgresPendingWrites.erasePersonal`):
    /// nothing here needs an answer at once. The layers' own rows are dropped; a request's
    /// erasure reaches the group's rows when the request passes.
    func erasePersonalValues(user: String, before: UInt64) throws -> [UInt64] {
        guard let stored = cache.personalOf[user] else { throw unloaded("read personal values to erase") }
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
        try sendNow("DELETE FROM \(t.tiles)", PostgresBindings(), "clear the tree")
    }

    /// One request of a commit group (see the type's comment): its writes are a layer that
    /// joins the group's when it passes and is dropped when it is refused (behind a real
    /// savepoint, rolled back, once it had to send them early).
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        if requestPending != nil { return try nestedSavepoint(body) }
        let (headBefore, replacingBefore) = (knownHead, replacing)
        savepoints += 1
        requestPending = PostgresPendingWrites()
        savepointOpen = false
        defer {
            savepoints -= 1
            requestPending = nil
            savepointOpen = false
            cacheAtSavepoint = nil
        }
        let result: T
        do {
            result = try body()
            if savepointOpen {
                try sendPending(&requestPending!)
                try sendNow("RELEASE SAVEPOINT \(savepointName)", PostgresBindings(), "release savepoint")
            } else {
                pending.merge(requestPending!)
                if pending.rowCount >= Self.sendEarly { try sendPending(&pending) }
            }
        } catch {
            requestPending = PostgresPendingWrites()
            (knownHead, replacing) = (headBefore, replacingBefore)
            if savepointOpen, let saved = cacheAtSavepoint { try rollbackToSavepoint(restoring: saved) }
            throw error
        }
        return result
    }

    /// Rolls the current savepoint back (every statement in flight was sent after it), and
    /// the reads kept with it: what PostgreSQL holds is again what it held at the savepoint.
    /// It is sent without waiting: its answer is collected with the others at the end, and a
    /// failure then fails the group.
    func rollbackToSavepoint(restoring saved: (cache: PostgresReadCache, frontierFetched: Bool)) throws {
        (cache, frontierFetched) = saved
        try sendNow("ROLLBACK TO SAVEPOINT \(savepointName)", PostgresBindings(), "rollback to savepoint")
    }

    /// A savepoint inside a request's: always a real one, after everything before it was sent.
    func nestedSavepoint<T>(_ body: () throws -> T) throws -> T {
        try sendAll()
        savepoints += 1
        defer { savepoints -= 1 }
        let saved = (cache, frontierFetched)
        try sendNow("SAVEPOINT \(savepointName)", PostgresBindings(), "savepoint")
        let result: T
        let (headBefore, replacingBefore) = (knownHead, replacing)
        do {
            result = try body()
            try sendPending(&requestPending!)
        } catch {
            requestPending = PostgresPendingWrites()
            (knownHead, replacing) = (headBefore, replacingBefore)
            try rollbackToSavepoint(restoring: saved)
            throw error
        }
        try sendNow("RELEASE SAVEPOINT \(savepointName)", PostgresBindings(), "release savepoint")
        return result
    }
}
