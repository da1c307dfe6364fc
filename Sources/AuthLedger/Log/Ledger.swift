import Synchronization
import AuthLedgerCore
import Foundation
import Logging

/// The device-trust ledger: an append-only, hash-chained log of events with
/// maintained projections, over a store that a driver opens: `Ledger(lmdb:)` (module
/// AuthLedgerLMDB, the embedded default) or `Ledger(postgres:)` (module AuthLedgerPostgres).
public final class Ledger: Sendable {
    /// The store under the log: for the project's drivers, tests and benchmark (package access), never for a service.
    package let storage: any StorageBackend
    /// How this ledger was opened (key files, origin, replay partitions…).
    public let configuration: Configuration
    /// The directory of the files beside the log (the LMDB store directory unless
    /// configured otherwise; nil for a PostgreSQL store without one).
    public var path: String? { configuration.keyDirectory }
    let logger = Logger(label: "authledger.ledger")
    /// The OTP secrets, read from their key file on first use.
    let cachedSecrets = Mutex<OTPSecrets?>(nil)
    /// The writer thread of this process (group commit for the asynchronous `append` and `perform`).
    let writer: Writer
    /// The commit observers by id, and the last id handed out.
    private let observers = Mutex<(next: Int, all: [Int: @Sendable (Head) -> Void])>((0, [:]))
    /// The shared notifier and reader of new commits for this ledger's live feeds.
    let feedHub = FeedHub()

    /// A ledger over `storage` — a driver's store — with the files beside the log in `path` (nil: none).
    package convenience init(storage: any StorageBackend, path: String? = nil) async throws {
        try await self.init(storage: storage, configuration: Configuration(keyDirectory: path))
    }

    /// A ledger over `storage` (the store a driver opened) with `configuration`'s settings.
    /// Maintained projections that are behind the log (an older format, an interrupted
    /// rebuild) are rebuilt before the ledger is handed out. Every step awaits its store (on
    /// PostgreSQL no thread waits for it); the work that writes runs on the writer's task.
    package init(storage: any StorageBackend, configuration: Configuration) async throws {
        self.storage = storage
        self.configuration = configuration
        self.writer = Writer(storage: storage)
        writer.pipelined = configuration.pipelinedCommit
        writer.didCommit = { [weak self] head in self?.notifyCommit(head) }
        // Several servers on one shared store (PostgreSQL): the others' commits wake this one's feeds.
        (storage as? any CommitNotifying)?.listenForCommits { [weak self] head in self?.notifyCommit(head) }
        let (head, checkpoint, layout) = try await storage.readAsync({ ReadLoad(meta: [Ledger.projectionLayoutKey]) }) { r in
            (try r.head(), try r.checkpoint(), try r.metaValue(Ledger.projectionLayoutKey))
        }
        if head.seq != checkpoint {
            logger.notice("projections behind the log; rebuilding", metadata: ["head": "\(head.seq)", "checkpoint": "\(checkpoint)"])
            try await replay()
        } else if head.seq > 0 && layout == Ledger.layoutWithoutStreamHashes {
            // States written before stream hashes: computed from the log, the states kept.
            try await buildStreamHashesOnOpen(head: head.seq)
        } else if head.seq > 0 && layout != Ledger.projectionLayout {
            // A store written before challenges, OTPs and grants had their own indexes
            // (replay rebuilds the Merkle tree too).
            logger.notice("projections in an older layout; rebuilding", metadata: ["head": "\(head.seq)"])
            try await replay()
        } else {
            try await ensureTree()
        }
        try await finishPendingPurge()
        feedHub.attach(self)
        _ = addCommitObserver { [commits = feedHub.commits] _ in commits.ring() }
    }

    deinit { writer.stop() }

    /// Finishes the writes already queued, stops the writer thread and the store's
    /// background work (a PostgreSQL commit listener and its connections), and returns when
    /// they have ended. Writes are refused afterwards (`storage_error`, the ledger is closed);
    /// do not use the ledger after it.
    public func close() async {
        await writer.close()
        await storage.close()
    }

    // MARK: Commit observers

    /// Registers `f` to be called (on the writer thread for this instance's writes) with the new head after
    /// every commit made through this `Ledger` instance. Other processes' commits are
    /// not observed: poll `head()` for those.
    public func addCommitObserver(_ f: @escaping @Sendable (Head) -> Void) -> Int {
        observers.withLock { o in
            o.next += 1
            o.all[o.next] = f
            return o.next
        }
    }

    /// Stops calling the observer `addCommitObserver` returned `id` for.
    public func removeCommitObserver(_ id: Int) {
        _ = observers.withLock { $0.all.removeValue(forKey: id) }
    }

    func notifyCommit(_ head: Head) {
        for f in observers.withLock({ Array($0.all.values) }) { f(head) }
    }

    /// The log's head: its last `seq` and that event's chain hash.
    public func head() async throws -> Head { try await read { try $0.head() } }

    /// Whether the group-commit writer pipelines durable commits (see `Writer.pipelined`):
    /// off by default (``Configuration/pipelinedCommit``); the benchmark
    /// measures both in one run.
    package var pipelinesCommits: Bool {
        get { writer.pipelined }
        set { writer.pipelined = newValue }
    }

    /// How long the group-commit writer waits at most for the callers of its last batch to
    /// rejoin before it commits a smaller one (`Writer.fill`): 200 µs by default; the
    /// benchmark measures it against 0 in one run.
    package var groupCommitLinger: TimeInterval {
        get { writer.linger }
        set { writer.linger = newValue }
    }

    /// What this ledger's appends do beyond the rules and the chain: all on but in the
    /// benchmark's same-run baselines, never off for a store that is kept.
    package var appendSwitches: AppendSwitches { writer.switches }
}

extension Ledger {
    /// The store's in-place access (`InPlaceStorage`: LMDB), for the paths only such a
    /// store takes; a store without it (PostgreSQL) never reaches them (`storage_error`).
    var inPlace: any InPlaceStorage {
        get throws {
            guard let s = storage as? any InPlaceStorage else {
                throw LedgerError(.storageError, "this path reads the store in place, which this store does not")
            }
            return s
        }
    }
}
