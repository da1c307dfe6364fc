import AuthLedger
import NIOCore
import PostgresNIO

extension PostgresStorage {
    /// A commit group's write (`StorageBackend.writeGroup`, see `PostgresAccess`) with no
    /// thread waiting for PostgresNIO: the head's lock and the catch-up, `start`, then the
    /// group's load step (`PostgresAccess.load`, one round trip), then `body` once over what
    /// was loaded, and its writes with COMMIT (one round trip).
    package func writeGroup<T: Sendable>(start: (any StorageReader, StreamsChanged?) throws -> Void, load: () -> StorageLoad,
                                         _ body: (any StorageWriter) throws -> T) async throws -> T {
        try await groupTransaction(prepare: { access in
            try start(access, access.changedSince.map { StreamsChanged(since: $0.head, streams: $0.streams) })
            try await access.load(load())
        }, body)
    }

    /// A write that reads nothing but the head (the erasure's flag): a group with nothing to load.
    package func writeAsync<T: Sendable>(_ body: (any StorageWriter) throws -> T) async throws -> T {
        do {
            return try await writeGroup(start: { _, _ in }, load: { StorageLoad() }, body)
        } catch let e as GroupStatementRefused { throw e.error }
    }

    /// A replay's or the user index's write (`AsyncBatchScanning.writeAwaiting`): a group's
    /// transaction, whose body runs after `work` was awaited with the locked head (its scan
    /// runs on other connections meanwhile) and what `load` names was loaded (a group's
    /// load step). The body reads nothing it did not get from `work` or `load`.
    package func writeAwaiting<S: Sendable, T: Sendable>(_ work: (Head) async throws -> S, load: (S) -> StorageLoad,
                                                         _ body: (any StorageWriter, S) throws -> T) async throws -> T {
        var value: S?
        do {
            return try await groupTransaction(prepare: { access in
                let got = try await work(try access.head())
                value = got
                try await access.load(load(got))
            }) { w in
                try body(w, value!)
            }
        } catch let e as GroupStatementRefused { throw e.error }
    }

    /// `prepare` runs on the transaction once it is open, before the body.
    private func groupTransaction<T: Sendable>(prepare: (PostgresAccess) async throws -> Void,
                                               _ body: (any StorageWriter) throws -> T) async throws -> T {
        try await connections.withSession { s in
            var reusable = false
            defer { if !reusable { s.discard() } }
            do {
                let keptBefore = kept.withLock { $0 }
                groupRoundTrips.add(1)
                // (`start` reads the head and the generation, which the catch-up answered.)
                let access = try await open(s, kept: keptBefore)
                let result: T
                let committing: EventLoopFuture<PostgresQueryResult>
                do {
                    try await prepare(access)
                    result = try body(access)
                    try access.sendAll()
                    // COMMIT goes with the group's last statement: if that one fails, PostgreSQL
                    // answers COMMIT with ROLLBACK, and the failure is what `drainAsync` throws.
                    committing = s.send("COMMIT", PostgresBindings())
                    groupRoundTrips.add(1)
                    do { try await access.drainAsync() } catch {
                        _ = try? await committing.get()
                        throw error
                    }
                } catch {
                    _ = try? await access.drainAsync()
                    if (try? await s.send("ROLLBACK", PostgresBindings()).get()) != nil { reusable = true }
                    throw error
                }
                try await committed(committing, access, reusable: &reusable)
                return result
            } catch let e as PostgresFailure where e.refusedInGroup {
                refusedGroups.add(1)
                throw GroupStatementRefused(error: e.ledgerError)
            }
        }
    }
}
