import AuthLedger
import AuthLedgerCore
import NIOCore
import PostgresNIO

extension PostgresStorage {
    /// `write` for the writer's task (`Writer`): the same transaction — the head's lock, a
    /// deferred attempt, COMMIT before it returns — and no thread waits for PostgresNIO:
    /// the connection is acquired and every answer awaited, and `body` runs wait-free
    /// (`PostgresAccess+WaitFree.swift`), again after each fetch of what it missed.
    ///
    /// Two cases still wait, on the calling thread (the writer's own, never the cooperative
    /// pool): after PostgreSQL refused a statement of the attempt, the write runs again
    /// strict (each request's statements answered before the next: a refusal the rules
    /// could not foresee, rare), and a body that needs an answer at once (a nested
    /// savepoint, a read after it sent statements) is rolled back and done
    /// blocking. `blockingWrites` counts them.
    package func writeAsync<T: Sendable>(_ body: (any StorageWriter) throws -> T) async throws -> T {
        do {
            return try await waitFreeTransaction(prepare: { _ in }, body)
        } catch let e as PostgresFailure where e.retryStrict {
            blockingWrites.add(1)
            return try writeStrict(body)
        } catch is PostgresMustBlock {
            blockingWrites.add(1)
            return try write(body)
        }
    }

    /// A commit group's write (`StorageBackend.writeGroup`): `writeAsync`'s transaction,
    /// whose body runs after `start` and after the group's load step (`PostgresAccess.load`:
    /// what `load` names, and the tree's frontier, in one round trip), so that a group whose
    /// reads were all named misses nothing and runs once. (A read it did not name is still
    /// fetched and run again, as in `writeAsync`.)
    package func writeGroup<T: Sendable>(start: (any StorageReader, StreamsChanged?) throws -> Void, load: () -> StorageLoad,
                                         _ body: (any StorageWriter) throws -> T) async throws -> T {
        do {
            return try await waitFreeTransaction(prepare: { access in
                try start(access, access.changedSince.map { StreamsChanged(since: $0.head, streams: $0.streams) })
                try await access.load(load())
            }, body)
        } catch let e as PostgresFailure where e.retryStrict {
            blockingWrites.add(1)
            return try writeStrict { w in try start(w, nil); return try body(w) }
        } catch is PostgresMustBlock {
            blockingWrites.add(1)
            return try write { w in try start(w, nil); return try body(w) }
        }
    }

    /// A replay's write (`AsyncBatchScanning.writeAwaiting`): `writeAsync`'s transaction,
    /// whose body runs after `work` was awaited with the locked head (the scan runs on
    /// other connections meanwhile). A write that cannot stay wait-free is rolled back and
    /// `AwaitingUnsupported` thrown: the replay is then done blocking.
    package func writeAwaiting<S: Sendable, T: Sendable>(_ work: (Head) async throws -> S,
                                                         _ body: (any StorageWriter, S) throws -> T) async throws -> T {
        var value: S?
        do {
            return try await waitFreeTransaction(prepare: { access in value = try await work(try access.head()) }) { w in
                try body(w, value!)
            }
        } catch let e as PostgresFailure where e.retryStrict {
            throw AwaitingUnsupported()
        } catch is PostgresMustBlock {
            throw AwaitingUnsupported()
        }
    }

    /// A wait-free run stops being one after this many runs (a body that keeps missing).
    static let maxRuns = 64

    /// `prepare` runs on the transaction once it is open, before the body's first run.
    private func waitFreeTransaction<T: Sendable>(prepare: (PostgresAccess) async throws -> Void,
                                                  _ body: (any StorageWriter) throws -> T) async throws -> T {
        try await connections.withSession { s in
            var reusable = false
            defer { if !reusable { s.discard() } }
            do {
                let keptBefore = kept.withLock { $0 }
                let access = try opened(s, try await open(s, Self.writeBegin, lockHead: true, kept: keptBefore).get(),
                                        kept: keptBefore, deferred: true)
                let result: T
                let committing: EventLoopFuture<PostgresQueryResult>
                do {
                    try await prepare(access)
                    access.waitFree = true
                    access.run.frontierFetched = access.frontierFetched
                    var runs = 0
                    while true {
                        access.beginRun()
                        let outcome = Result { try body(access) }
                        if access.run.mustBlock { throw PostgresMustBlock() }
                        if access.run.needs.isEmpty {
                            result = try outcome.get()
                            break
                        }
                        runs += 1
                        if runs >= Self.maxRuns { throw PostgresMustBlock() }
                        try await access.fill()
                        writeFills.add(1)
                    }
                    try access.finishWrites()
                    // COMMIT goes with the group's statement (see `transaction`).
                    committing = s.send("COMMIT", PostgresBindings())
                    do { try await access.drainAsync() } catch {
                        _ = try? await committing.get()
                        throw error
                    }
                } catch {
                    access.discardPending()
                    _ = try? await access.drainAsync()
                    if (try? await s.send("ROLLBACK", PostgresBindings()).get()) != nil { reusable = true }
                    throw error
                }
                let answer: Result<PostgresQueryResult, any Error>
                do { answer = .success(try await committing.get()) } catch { answer = .failure(error) }
                try committed(answer, access, lockHead: true, reusable: &reusable)
                return result
            } catch let e as PostgresFailure {
                if e.retryStrict { throw e }
                throw e.ledgerError
            }
        }
    }
}
