import AuthLedgerCore
import Foundation

/// The writer: one dedicated OS thread runs every write transaction of a `Ledger` — a
/// task whose executor is that thread (`WriterExecutor`), so that a write that awaits
/// its store (PostgreSQL's `writeAsync`) leaves the thread idle instead of blocked.
/// Requests of the asynchronous API (`append`, `perform`) queue to it and are committed
/// together in one durable transaction (group commit); each caller is resumed only after
/// that commit, and a refused request refuses only itself (each runs in its own nested
/// transaction). The synchronous API (`append`, `perform`, `replay`, `erase`,
/// `expireDueChallenges`) hands its work to the same thread, which runs it alone, in
/// its own transaction, in queue order, while the caller waits (`exclusive`). Work that
/// is already on the writer thread (a commit observer that writes) runs inline instead
/// of waiting on itself. Other processes' writers are serialised by the store (LMDB's
/// single writer; PostgreSQL's locked head row).
// @unchecked: the queue, counters and held batch are guarded by `lock` (an NSCondition:
// the thread waits on it, which Mutex cannot); the caches are the writer thread's alone.
final class Writer: @unchecked Sendable {
    /// A request's work in its group's transaction. It may run more than once (LMDB runs
    /// the group again after its map grew): only the last run's writes and value count, so
    /// it has no other effect.
    typealias Job = (AppendSession) throws -> any Sendable
    enum Work {
        /// A request of the group-commit API, run in the batch's transaction.
        case request(Job)
        /// Work with its own transaction(s), run alone (synchronous work, or work that awaits).
        case alone(() async -> Void)
    }
    struct Pending {
        let work: Work
        let done: @Sendable (Result<any Sendable, Error>) -> Void
        var job: Job { if case let .request(j) = work { return j }; preconditionFailure("not a request") }
        var isRequest: Bool { if case .request = work { return true }; return false }
        /// An append request's inputs, loaded for the whole group before it runs (`groupLoad`).
        var inputs: [EventInput] = []
        /// The streams whose states the request reads (a command's user), loaded likewise.
        var states: [String] = []
        /// The `(kind, user, id)` records a command's events will name, loaded likewise.
        var records: [(kind: RecordKind, user: String, id: String)] = []
        /// The meta values the request reads (a durable subscription), loaded likewise.
        var meta: [String] = []
    }
    /// The writer thread, once the loop runs (under `lock`).
    private var thread: pthread_t?

    let storage: any StorageBackend
    let lock = NSCondition()
    private var queue: [Pending] = []
    private var stopped = false
    // Projection states as of `cachedHead`, kept between transactions (writer thread only).
    var cachedUsers: [String: UserState] = [:]
    /// The cached users' stream heads (stream hashes), so a group's fold need not read
    /// them back from the store (on PostgreSQL a read the load step did not name).
    var cachedStreams: [String: StreamHead] = [:]
    var cachedSystem: SystemState?
    var cachedHead: Head?
    var cachedGeneration: [UInt8]?
    /// The cache is dropped when it holds more users than this (a user state is a few KB).
    static let maxCachedUsers = 10_000
    /// At most this many requests share one transaction.
    let maxBatch: Int
    /// What appends do beyond the rules and the chain (all on but in the benchmark's baselines).
    let switches = AppendSwitches()
    /// The second thread hashing large requests' events beside the rules (started at the first one).
    let hashing = HashPipeline()
    /// Called on the writer thread after each commit with the new head (once durable).
    var didCommit: (@Sendable (Head) -> Void)?
    /// Pipelined durable commit: a batch's commit syncs its data but not its meta page
    /// (one fsync instead of two), and its callers are answered only when the commit is
    /// durable — after the next batch's commit synced (which flushes that meta page
    /// too), or after an explicit sync when no batch is waiting. Never earlier.
    var pipelined: Bool {
        get { lock.lock(); defer { lock.unlock() }; return pipelinedValue }
        set { lock.lock(); pipelinedValue = newValue; lock.unlock() }
    }
    /// Off by default: measured on this project's machine it did not pay (see
    /// docs/BENCHMARKS.md, "Pipelined commit"); `Ledger.Configuration.pipelinedCommit` turns it on.
    private var pipelinedValue = false
    /// A committed batch waiting for its commit to become durable (writer thread only).
    struct Held {
        let batch: [Pending]
        let results: [Result<any Sendable, Error>]
        let head: Head
        /// The batch's first seq.
        let from: UInt64
    }
    var held: Held?
    /// The first seq of the held batch, committed but not yet durable (nil: none held):
    /// the live feed's notifier reads only what is before it.
    var nonDurableFrom: UInt64? {
        lock.lock()
        defer { lock.unlock() }
        return nonDurableFromValue
    }
    private var nonDurableFromValue: UInt64?
    /// Explicit syncs made because the writer went idle with a batch held.
    private var idleSyncs = 0

    init(storage: any StorageBackend, maxBatch: Int = 1024) {
        self.storage = storage
        self.maxBatch = maxBatch
        // Neither the task nor the thread is stored: the task keeps this writer alive while
        // it runs, and the thread ends with it. Storing them made a cycle (writer → thread →
        // closure → writer) that kept every closed ledger's LMDB environment — file
        // descriptors and memory map — open for the process' lifetime.
        let executor = WriterExecutor(name: "authledger-writer")
        Task(executorPreference: executor) {
            await self.loop()
            executor.stop()
        }
    }

    /// Queues `job`; `done` is called after the transaction that carried it committed (or failed).
    func submit(_ job: @escaping Job, inputs: [EventInput] = [], states: [String] = [],
                records: [(kind: RecordKind, user: String, id: String)] = [], meta: [String] = [],
                done: @escaping @Sendable (Result<any Sendable, Error>) -> Void) {
        enqueue(Pending(work: .request(job), done: done, inputs: inputs, states: states, records: records, meta: meta))
    }

    func enqueue(_ p: Pending) {
        lock.lock()
        if stopped {
            lock.unlock()
            p.done(.failure(LedgerError(.storageError, "the ledger is closed")))
            return
        }
        queue.append(p)
        lock.signal()
        lock.unlock()
    }

    /// Whether the calling thread is the writer thread.
    var isCurrentThread: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    var batches = 0, requests = 0, busyNanoseconds: UInt64 = 0, commitNanoseconds: UInt64 = 0

    /// Transactions committed, requests they carried, and time spent in them (all and in commit).
    var stats: WriterStats {
        lock.lock()
        defer { lock.unlock() }
        return WriterStats(transactions: batches, requests: requests, busySeconds: Double(busyNanoseconds) / 1e9,
                           commitSeconds: Double(commitNanoseconds) / 1e9, idleSyncs: idleSyncs)
    }

    /// Requests waiting for the next transaction (for tests that build a batch).
    var queuedCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return queue.count
    }

    /// Finishes queued work, then stops the thread.
    func stop() {
        lock.lock()
        stopped = true
        lock.broadcast()
        lock.unlock()
    }

    /// Stops taking work and returns once the queued work is done and the thread has ended.
    func close() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            lock.lock()
            stopped = true
            if ended {
                lock.unlock()
                c.resume()
                return
            }
            closeWaiters.append(c)
            lock.broadcast()
            lock.unlock()
        }
    }

    /// Whether the thread has ended, and who waits for it (under `lock`).
    private var ended = false
    private var closeWaiters: [CheckedContinuation<Void, Never>] = []

    /// What the loop does next.
    private enum Step {
        case settle
        case alone(Pending)
        case batch([Pending], pipelined: Bool)
        case end([CheckedContinuation<Void, Never>])
    }

    private func loop() async {
        lock.withLock { thread = pthread_self() }
        while true {
            switch nextStep() {
            case .settle:
                // Idle with a batch held: make it durable now rather than wait for the next.
                settleHeld()
            case .alone(let p):
                // What was committed before it is acknowledged first, durable.
                if held != nil { settleHeld() }
                if case let .alone(work) = p.work { await work() }
                p.done(.success(()))
            case .batch(let batch, let pipelined):
                if !pipelined && held != nil { settleHeld() }
                await run(batch, pipelined: pipelined)
            case .end(let waiters):
                hashing.stop()
                for w in waiters { w.resume() }
                return
            }
        }
    }

    /// Waits for work and takes it off the queue.
    private func nextStep() -> Step {
        lock.lock()
        defer { lock.unlock() }
        while queue.isEmpty && !stopped && held == nil { lock.wait() }
        if queue.isEmpty {
            if held != nil { return .settle }
            ended = true
            defer { closeWaiters = [] }
            return .end(closeWaiters)
        }
        if !queue[0].isRequest { return .alone(queue.removeFirst()) }
        fill()
        let batch = Array(queue.prefix { $0.isRequest }.prefix(maxBatch))
        lastBatch = batch.count
        queue.removeFirst(batch.count)
        return .batch(batch, pipelined: pipelinedValue)
    }

    /// Group commit fill: the callers the last commit answered come back within
    /// microseconds with their next request. Taking the queue at once would split them
    /// over two commits (the ones already queued now, the rest next time: measured as a
    /// mean batch of 40 with 64 writers); waiting up to `linger` while fewer than the last
    /// batch are queued lets one durable commit carry them all. No wait after a batch of
    /// one (a lone caller is never delayed) or with `linger` zero. Called under `lock`.
    private func fill() {
        guard lastBatch > 1, lingerValue > 0, queue.count < min(lastBatch, maxBatch), queue.allSatisfy(\.isRequest) else { return }
        let deadline = Date(timeIntervalSinceNow: lingerValue)
        while queue.count < min(lastBatch, maxBatch) && !stopped && queue.last?.isRequest != false {
            if !lock.wait(until: deadline) { return }
        }
    }

    /// Requests the last batch carried (writer thread, under `lock`).
    private var lastBatch = 0
    /// How long `fill` waits at most, in seconds (0: never).
    var linger: TimeInterval {
        get { lock.lock(); defer { lock.unlock() }; return lingerValue }
        set { lock.lock(); lingerValue = newValue; lock.unlock() }
    }
    private var lingerValue: TimeInterval = 0.000_2

    /// Answers the held batch: durable after an explicit sync, or failed if the sync failed
    /// (its commit is then not known to be durable, so it is not acknowledged).
    func settleHeld() {
        guard let h = held else { return }
        held = nil
        do {
            // (Only a pipelined commit is ever held: its store commits pipelined.)
            try (storage as? any PipelinedCommits)?.sync()
            publishNonDurable()
            lock.lock()
            idleSyncs += 1
            lock.unlock()
            release(h)
        } catch {
            publishNonDurable()
            for p in h.batch { p.done(.failure(LedgerError(.storageError, "the commit could not be made durable: \(error)"))) }
        }
    }

    /// What readers of this process must not deliver yet: the held batch, if any.
    func publishNonDurable(_ from: UInt64? = nil) {
        lock.lock()
        nonDurableFromValue = held?.from ?? from
        lock.unlock()
    }

    func release(_ h: Held) {
        didCommit?(h.head)
        for (p, r) in zip(h.batch, h.results) { p.done(r) }
    }
}

extension Writer {
    /// What the group's requests will read that the cache does not hold (`StorageBackend.writeGroup`'s
    /// load, asked only by a store whose every read is a round trip): the states of the
    /// streams they append to or read, the records their events name, their event ids.
    /// (Called after the group's `start`: the cache is then the one the group adopts.)
    func groupLoad(_ batch: [Pending]) -> StorageLoad {
        var load = StorageLoad()
        load.appends = true
        if cachedSystem == nil { load.states.append(systemStream) }
        for p in batch {
            for user in p.states where cachedUsers.index(forKey: user) == nil { load.states.append(user) }
            load.meta += p.meta
            for r in p.records where cachedUsers[r.user].map({ !$0.hasRecord(r.kind, r.id) }) ?? true { load.records.append(r) }
            for input in p.inputs {
                let e = input.event
                if let id = e.id { load.ids.append(id) }
                guard let user = e.user else { continue }
                // (Looked up in place: a copy of a state retains every string and dictionary in it.)
                let cached = cachedUsers.index(forKey: user)
                if cached == nil { load.states.append(user) }
                for (kind, id) in UserState.recordIds(of: e) where cached.map({ !cachedUsers.values[$0].hasRecord(kind, id) }) ?? true {
                    load.records.append((kind, user, id))
                }
                if e.type == .userErased { load.erased.append(user) }
            }
        }
        return load
    }
}
