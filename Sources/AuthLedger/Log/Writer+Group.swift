import AuthLedgerCore
import Foundation

/// A group commit in named steps (writer thread only): take the cache or drop it (`startGroup`),
/// run the group's requests in one transaction (`runGroup`), answer them once the commit is
/// durable and ring the commit observer (`answer`, `answerPipelined`).
extension Writer {
    /// What the steps of one group share.
    struct Group {
        let batch: [Pending]
        /// Each request's outcome, in order (of the body's last run).
        var results: [Result<any Sendable, Error>] = []
        /// The head's seq before the group.
        var startSeq: UInt64 = 0
        /// Whether the body's next run adopts the writer's cache.
        var adopt = false
        let started = DispatchTime.now().uptimeNanoseconds
        /// When the body ended (the commit's time follows).
        var bodyDone: UInt64

        init(_ batch: [Pending]) {
            self.batch = batch
            bodyDone = started
        }
    }

    /// Runs `batch` in one transaction and answers its requests.
    func run(_ batch: [Pending], pipelined: Bool) async {
        // Pipelined only on a store that commits so; another commits every group durably.
        let pipelined = pipelined && storage is any PipelinedCommits
        var group = Group(batch)
        defer { count(group) }
        do {
            if pipelined, let storage = storage as? any PipelinedCommits {
                let (head, durable, synced) = try storage.writePipelined { w in
                    try startGroup(w, nil, &group)
                    return try runGroup(w, &group, pipelined: true)
                }
                answerPipelined(group, head: head, durable: durable, synced: synced)
            } else {
                let head = try await storage.writeGroup(start: { try startGroup($0, $1, &group) }, load: { groupLoad(batch) }) { w in
                    try runGroup(w, &group, pipelined: false)
                }
                answer(group, head: head)
            }
        } catch is EveryRequestRefused {
            // Aborted on purpose: each request gets its own refusal.
            publishNonDurable()
            for (p, r) in zip(batch, group.results) { p.done(r) }
        } catch is GroupStatementRefused where batch.count > 1 {
            // The store refused the group's writes, no one request's: each again alone, so
            // that only the one at fault fails.
            for p in batch { await run([p], pipelined: false) }
        } catch {
            // The transaction did not commit: nobody in the batch is acknowledged. A held
            // batch is not known to be durable (this commit may not have synced): sync it.
            settleHeld()
            publishNonDurable()
            let error = (error as? GroupStatementRefused)?.error ?? error
            for p in batch { p.done(.failure(error)) }
        }
    }

    /// Take the cache: another process (or Ledger.append) may have committed in between, or a
    /// replay rewritten the projections: the cache is only used when the head and the
    /// projections' generation are still the ones it reflects, or when the store knows
    /// which streams another server appended to since (those alone are dropped).
    private func startGroup(_ r: any StorageReader, _ changed: StreamsChanged?, _ group: inout Group) throws {
        let head = try r.head()
        let generation = try r.metaValue(Ledger.projectionGenerationKey)
        group.adopt = false
        if let cachedHead, cachedGeneration == generation {
            if cachedHead == head {
                group.adopt = true
            } else if let changed, changed.since == cachedHead {
                for stream in changed.streams { cachedUsers[stream] = nil; cachedStreams[stream] = nil }
                if changed.streams.contains(systemStream) { cachedSystem = nil }
                group.adopt = true
            }
        }
        if !group.adopt {
            cachedUsers = [:]
            cachedStreams = [:]
            cachedSystem = nil
        }
        cachedHead = nil
        cachedGeneration = generation
    }

    /// Run the group: each request in its own nested transaction, then the session's
    /// projections and head; returns the head to commit.
    private func runGroup(_ w: any StorageWriter, _ group: inout Group, pipelined: Bool) throws -> Head {
        // The body may run again (LMDB's map grew):
        // start from scratch each time; only the first run adopts the cache.
        group.results = []
        let session = try AppendSession(w)
        group.startSeq = session.head.seq
        // Marked before the commit: no reader of this process may deliver it until durable.
        if pipelined { publishNonDurable(group.startSeq + 1) }
        session.switches = switches
        session.hashing = hashing
        if group.adopt { session.adopt(users: &cachedUsers, streams: &cachedStreams, system: cachedSystem) }
        group.adopt = false
        cachedUsers = [:]
        cachedStreams = [:]
        cachedSystem = nil
        for p in group.batch {
            group.results.append(try runRequest(p, session))
        }
        // Nothing to commit when every request was refused: no empty durable commit.
        guard group.results.contains(where: { if case .success = $0 { true } else { false } }) else {
            throw EveryRequestRefused()
        }
        try session.finish()
        if session.users.count <= Writer.maxCachedUsers {
            cachedUsers = session.users
            cachedStreams = session.streams
            cachedSystem = session.system
        }
        group.bodyDone = DispatchTime.now().uptimeNanoseconds
        return session.head
    }

    /// One request in its nested transaction: its value, or its refusal (the others go on);
    /// throws what spoils the whole transaction.
    private func runRequest(_ p: Pending, _ session: AppendSession) throws -> Result<any Sendable, Error> {
        do {
            return .success(try session.isolated { try p.job(session) })
        } catch let e as LedgerError {
            return .failure(e)
        } catch let e as any TransactionFailure where e.spoilsTransaction {
            // The map must grow, or the environment is broken: the whole
            // transaction goes (and runs again after growth).
            throw e
        } catch {
            // Any other failure is this request's alone: its nested transaction
            // was rolled back, the others of the batch go on.
            return .failure(LedgerError(.storageError, "the request failed (\(type(of: error)))"))
        }
    }

    /// Answer a group committed durably, and ring the commit observer.
    private func answer(_ group: Group, head: Head) {
        if !cachedUsers.isEmpty || cachedSystem != nil { cachedHead = head }
        didCommit?(head)
        for (p, r) in zip(group.batch, group.results) { p.done(r) }
    }

    /// Answer what a pipelined commit made durable: this commit's sync made the held one
    /// durable (an empty commit synced nothing: sync explicitly, never answer out of order);
    /// this group is held until the next commit's sync unless it is durable already.
    private func answerPipelined(_ group: Group, head: Head, durable: Bool, synced: Bool) {
        if !cachedUsers.isEmpty || cachedSystem != nil { cachedHead = head }
        var durableNow: [Held] = []
        if let h = held {
            if synced { held = nil; durableNow.append(h) } else { settleHeld() }
        }
        let h = Held(batch: group.batch, results: group.results, head: head, from: group.startSeq + 1)
        if durable { durableNow.append(h) } else { held = h }
        publishNonDurable()
        for h in durableNow { release(h) }
    }

    /// Adds the group to the writer's statistics.
    private func count(_ group: Group) {
        let now = DispatchTime.now().uptimeNanoseconds
        lock.withLock {
            batches += 1
            requests += group.batch.count
            busyNanoseconds += now - group.started
            commitNanoseconds += now - group.bodyDone
        }
    }
}

/// Thrown to abort a batch whose every request was refused.
struct EveryRequestRefused: Error {}
