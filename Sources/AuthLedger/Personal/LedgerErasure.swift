import AuthLedgerCore
import Foundation

/// What an erasure did.
public struct ErasureOutcome: Sendable {
    /// The `user.erased` event.
    public var event: RecordedEvent
    /// Events whose personal values were destroyed.
    public var erasedEvents: Int
    /// The log's head after the erasure's `user.erased`.
    public var head: Head
}

extension Ledger {
    /// Meta key set by an erasure until the store was purged of the erased bytes (so an
    /// interrupted purge is finished when the store is next opened).
    static let purgePendingKey = "erasurePurgePending"

    /// Erases the personal values of `user` (reference §7): appends `user.erased`, destroys the
    /// values and salts of the user's earlier events in the same transaction, then purges
    /// the store's files of the deleted bytes. Leaves, hashes and proofs do not change.
    /// Runs alone on the writer's task while the calling task is suspended, and awaits its
    /// store (on PostgreSQL, a write group that loads the user's state, personal values and
    /// records first, and an awaited VACUUM: no thread waits).
    /// `caller` is recorded as `meta.caller` (the server's authenticated caller).
    public func erase(_ user: String, reason: String? = nil, actor: String? = nil, caller: String? = nil,
                      now: Timestamp = .now()) async throws -> ErasureOutcome {
        let body = try erasure(user, reason: reason, actor: actor, caller: caller, now: now)
        return try await writer.exclusiveAsync { [self] in
            let outcome: ErasureOutcome
            do {
                outcome = try await storage.writeGroup(start: { _, _ in }, load: {
                    var load = StorageLoad()
                    load.appends = true
                    load.states = [user, systemStream]
                    load.erased = [user]
                    return load
                }, body)
            } catch let e as GroupStatementRefused { throw e.error }
            notifyCommit(outcome.head)
            try await purgeErasedBytes()
            return outcome
        }
    }

    /// Checks an erasure's arguments and returns its write transaction's body.
    private func erasure(_ user: String, reason: String?, actor: String?, caller: String? = nil,
                         now: Timestamp) throws -> @Sendable (any StorageWriter) throws -> ErasureOutcome {
        try EventDecoder.checkUser(user)
        var dataJSON: [(String, JSON)] = []
        if let reason { dataJSON.append(("reason", .string(reason))) }
        let data = try EventDecoder.decodeData(.object(dataJSON), type: .userErased)
        if let actor, !EventDecoder.isValidActor(actor) {
            throw LedgerError.invalid("meta.actor must be device:<id>, user, service:<name>, admin:<name> or system", field: "actor")
        }
        if let caller, !EventDecoder.isValidCaller(caller) {
            throw LedgerError.invalid("meta.caller must be service:<name>, token:<name> or cert:<identity>", field: "caller")
        }
        let pairs = [actor.map { ("actor", $0) }, caller.map { ("caller", $0) }].compactMap { $0 }
        let meta = pairs.isEmpty ? nil : StringMap(pairs.map { (key: $0.0, value: $0.1) })
        return { w in
            let session = try AppendSession(w)
            let state = try session.userState(user)
            guard state.version > 0 else { throw LedgerError(.userNotFound, "no events for user \(user)", field: "user") }
            // Never before the stream's last event: an erasure is not refused for the clock.
            let at = max(now, state.lastAt ?? now)
            var records = 0
            try w.scanPersonalValues(user: user) { _, _ in records += 1; return true }
            var checked = Set<String>()
            let input = EventInput(event: Event(type: .userErased, user: user, at: at, data: data, meta: meta))
            guard let r = try session.append(input, checked: &checked) else { throw LedgerError(.storageError, "erasure not appended") }
            try w.putMetaValue(Ledger.purgePendingKey, [1])
            try session.finish()
            return ErasureOutcome(event: r, erasedEvents: records, head: session.head)
        }
    }

    /// Rewrites the store so no deleted byte remains in its files, then clears the flag.
    private func purgeErasedBytes() async throws {
        try await storage.purgeDeleted()
        try await storage.writeAsync { w in try w.putMetaValue(Ledger.purgePendingKey, nil) }
    }

    /// Finishes a purge an erasure could not (a crash between its commit and the purge),
    /// alone on the writer's task.
    func finishPendingPurge() async throws {
        let pending = try await storage.readAsync({ ReadLoad(meta: [Ledger.purgePendingKey]) }) { r in
            try r.metaValue(Ledger.purgePendingKey) != nil
        }
        if pending { try await writer.exclusiveAsync { [self] in try await purgeErasedBytes() } }
    }
}
