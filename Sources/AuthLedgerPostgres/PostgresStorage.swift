import Synchronization
import AuthLedgerCore
import NIOCore
import PostgresNIO

/// The PostgreSQL backend (SPEC 8): the same log, indexes, projections, Merkle tree,
/// personal values and meta records as `LMDBStorage`, in the tables of `PostgresSchema`.
///
/// A write is one PostgreSQL transaction (READ COMMITTED) that first locks the one-row
/// `head` table `FOR UPDATE`: writers of every process on the database take their turn
/// there, and each one then reads the head, the projections and the indexes as the
/// previous one committed them, so `seq` stays gap-free in commit order. (The writer
/// thread's cache compares the head it reads there with the one it cached: another
/// server's append makes it reload.) A read is one REPEATABLE READ transaction: one
/// consistent snapshot, as an LMDB read transaction. A write returns after COMMIT, which
/// PostgreSQL makes durable (with its default `synchronous_commit`).
package final class PostgresStorage: StorageBackend, CommitNotifying, Sendable {
    /// Where the store is.
    public let location: PostgresLocation
    package let connections: PostgresConnections
    package let tables: PostgresTables
    /// This process's id in commit notifications (its own are not rung twice).
    let instance = String(UInt64.random(in: 0...UInt64.max), radix: 16)
    /// The connection listening for other servers' commits, once listening.
    private let listener = Mutex<PostgresCommitListener?>(nil)

    /// Connects to the database of `url` and creates or migrates the ledger's tables.
    /// The migration runs on a connection of its own, awaited (no thread waits for
    /// PostgreSQL; a database that cannot be reached fails at once, where the pool would
    /// keep trying).
    public init(url: String) async throws {
        location = try PostgresLocation(url: url)
        tables = PostgresTables(schema: location.schema)
        let connections = try PostgresConnections(location)
        self.connections = connections
        do {
            try await connections.withDedicated { [schema = location.schema] c in
                try await PostgresSchema.migrate(connections.session(c), schema: schema)
            }
        } catch {
            connections.shutdown()
            throw (error as? PostgresFailure)?.ledgerError ?? error
        }
    }

    deinit { connections.shutdown() }

    /// Stops listening for other servers' commits and closes the connections.
    package func close() async {
        listener.withLock { $0.take() }?.stop()
        connections.shutdown()
    }

    /// Calls `onCommit` with the new head after each commit of another process on this
    /// store (see `PostgresCommitListener`); a failure to listen only logs and is retried (feeds poll).
    package func listenForCommits(_ onCommit: @escaping @Sendable (Head) -> Void) {
        listener.withLock { listener in
            if listener == nil { listener = PostgresCommitListener(storage: self, onCommit) }
        }
    }

    /// Queries read (`readAsync`), and their load steps (round trips before the body ran;
    /// at most two each: for tests and diagnostics).
    package let queryReads = PostgresCounter()
    package let queryLoads = PostgresCounter()

    /// Reads a write group's body made that its load step had not named, each refused (a
    /// programming error: tests check that none is ever made).
    package let unloadedReads = PostgresCounter()
    /// Round trips of write groups: the head's lock with the catch-up, the load step (none
    /// when there is nothing to load), the writes with COMMIT (tests check a group's).
    package let groupRoundTrips = PostgresCounter()
    /// Groups of which PostgreSQL refused a statement (their requests then ran one per transaction).
    package let refusedGroups = PostgresCounter()

    /// What this process's last write left: its head, and the Merkle tree's frontier there
    /// (see `PostgresStorage+CatchUp.swift`). A write that locks that same head needs no
    /// tree read; one that finds another head (another server appended) catches up.
    let kept = Mutex<PostgresKept?>(nil)

    /// A write's BEGIN, the head's lock and the catch-up (`PostgresStorage+CatchUp.swift`),
    /// sent together (one round trip); the transaction's access, from the locked head, caught up.
    func open(_ s: PostgresSession, kept: PostgresKept?) async throws -> PostgresAccess {
        var head: Head?, caughtUp: [PostgresRow] = []
        // The locked row is the head every write of this transaction starts from.
        let lock = PostgresStatement("SELECT seq, hash FROM \(tables.head) FOR UPDATE", doing: "lock the head")
        try await s.load([(lock, { head = try $0.first.map(PostgresRows.head) }), (catchUpStatement(kept), { caughtUp = $0 })],
                         begun: s.send("BEGIN ISOLATION LEVEL READ COMMITTED", PostgresBindings()))
        let access = PostgresAccess(session: s, tables: tables, instance: instance, head: head, unloadedReads: unloadedReads,
                                    roundTrips: groupRoundTrips)
        try applyCatchUp(caughtUp, kept: kept, head: head, to: access)
        return access
    }

    /// Takes COMMIT's answer. A failed COMMIT leaves the outcome unknown to us: the
    /// connection is dropped, the caller is told storage_error, and a retry with the same
    /// event ids is answered as duplicates if the commit did happen. PostgreSQL answers
    /// COMMIT of a transaction that had failed with ROLLBACK: nothing was committed,
    /// nothing may be acknowledged.
    func committed(_ answer: EventLoopFuture<PostgresQueryResult>, _ access: PostgresAccess, reusable: inout Bool) async throws {
        let committed: PostgresQueryResult
        do { committed = try await answer.get() } catch {
            kept.withLock { $0 = nil }
            throw PostgresFailure(error, doing: "commit", location: access.s.location)
        }
        reusable = true
        guard committed.metadata.command == "COMMIT" else {
            throw LedgerError(.storageError, "PostgreSQL rolled the transaction back at COMMIT; nothing of it was written")
        }
        keepFrontier(access)
    }

    /// After a commit: what the next write catches up from — the new head, and its tree
    /// frontier from the hashes the transaction wrote or knew (nil when one is unknown here).
    private func keepFrontier(_ access: PostgresAccess) {
        guard let head = access.knownHead else {
            kept.withLock { $0 = nil }
            return
        }
        let generation = access.cache.meta[PostgresStorage.generationKey] ?? nil
        let indexes = PostgresAccess.frontierIndexes(head.seq)
        let known = indexes.compactMap { index -> (UInt64, [UInt8])? in
            if let w = access.lastAtLevel[MerkleTree.splitStoredHashIndex(index).level], w.index == index { return (index, w.hash) }
            return access.cache.tree.rows[index].map { (index, $0) }
        }
        let hashes = access.treeCleared || known.count < indexes.count ? nil : Dictionary(uniqueKeysWithValues: known)
        kept.withLock { $0 = PostgresKept(head: head, generation: generation, hashes: hashes) }
    }

    /// The meta key of the projections' generation (`Ledger.projectionGenerationKey`),
    /// which every write transaction of the writer reads first.
    static let generationKey = "projectionGeneration"

    /// Deleted rows stay in a table's files until it is rewritten: `VACUUM FULL` rewrites
    /// the tables that erasure and rebuilds change (the log and the tree are append-only).
    /// Awaited: no thread waits for the VACUUM.
    package func purgeDeleted() async throws {
        try await connections.withSession { s in
            do {
                try await s.execute("VACUUM FULL \(tables.personal), \(tables.states), \(tables.records), \(tables.meta)", doing: "vacuum")
            } catch {
                s.discard()
                throw error
            }
        }
    }
}

extension PostgresStorage {
    /// Runs one statement outside any ledger transaction; the first column of its rows
    /// as integers (for tests and diagnostics).
    package func integers(_ sql: String) async throws -> [Int64] {
        try await connections.withSession { s in try await s.execute(sql, doing: "a statement").map { try $0.decode(Int64.self) } }
    }
}

/// A counter shared by threads.
package final class PostgresCounter: Sendable {
    private let n: Atomic<Int>
    package init(_ value: Int = 0) { n = Atomic(value) }
    package func add(_ k: Int) { n.add(k, ordering: .relaxed) }
    package var value: Int { n.load(ordering: .relaxed) }
}

/// The qualified table names of one schema.
package struct PostgresTables: Sendable {
    package let schema, head, events, states, meta, tiles, records, personal: String
    init(schema: String) {
        self.schema = schema
        head = schema + ".head"
        events = schema + ".events"
        states = schema + ".states"
        meta = schema + ".meta"
        tiles = schema + ".tiles"
        records = schema + ".records"
        personal = schema + ".personal"
    }
}
