import AuthLedgerCore

/// A storage backend: one interface, async where the I/O is. Every write commits durably
/// before it returns: an acknowledged append is on disk.
package protocol StorageBackend: AnyObject, Sendable {
    /// A query's read: one consistent snapshot, and the calling thread never waits on
    /// another thread's I/O (the cooperative pool is never blocked). The query names what
    /// `body` reads (`load`; then, over what that loaded, `then`, when what it reads next
    /// depends on it): a store whose reads are dear (PostgreSQL) loads it in one step each,
    /// awaited, and `body` runs once, synchronously, over what was loaded — a read of
    /// something not named is a `storage_error`, never a wait. A store that reads in place
    /// (LMDB) ignores both and runs `body` on its memory-mapped pages: its zero-copy
    /// synchronous reads stay the fast path. (Why not async reads: the query bodies share
    /// their helpers — the Merkle tree's proofs, the user index's pages, a stream's hash,
    /// a user's state — with the write bodies, which decide synchronously over what their
    /// group loaded; async reads would need a second, async copy of each.)
    func readAsync<T: Sendable>(_ load: () -> ReadLoad, then: (any StorageReader) throws -> ReadLoad,
                                _ body: (any StorageReader) throws -> T) async throws -> T
    /// A write transaction for the writer's task (durable when it returns), and the calling
    /// thread does not wait on another thread's I/O. `body` reads nothing but the head
    /// (PostgreSQL: a `writeGroup` with nothing to load). A store that writes in place:
    /// its `write` (LMDB's commit is the calling thread's own fdatasync, and its
    /// transaction is bound to that thread).
    func writeAsync<T: Sendable>(_ body: (any StorageWriter) throws -> T) async throws -> T
    /// A commit group's write transaction, in three steps: `start` runs first (it reads the
    /// head and meta values, which a store has at hand when the transaction begins, and is
    /// told what the store knows of other processes' appends since this process's last
    /// group); then the store loads what `load` names in one step — LMDB does nothing (the
    /// map answers in place, and `load` is never asked), PostgreSQL reads it all in one
    /// round trip — and `body` decides and writes synchronously over it, reading nothing
    /// `load` did not name (PostgreSQL refuses another read as the request's failure). The
    /// same guarantees as `writeAsync` (durable when it returns; `body` may run more than
    /// once on LMDB, only its last run counting). A statement the store refuses after every
    /// check passed throws `GroupStatementRefused`. A store that writes in place: `start`
    /// and `body` in one `write`.
    func writeGroup<T: Sendable>(start: (any StorageReader, StreamsChanged?) throws -> Void, load: () -> StorageLoad,
                                 _ body: (any StorageWriter) throws -> T) async throws -> T
    /// Makes sure nothing deleted remains anywhere in the store's files (after an erasure),
    /// on the writer's task: the calling thread does not wait on another thread's I/O (LMDB's
    /// compacted copy is the calling thread's own work: its synchronous method never suspends).
    func purgeDeleted() async throws
    /// Stops what the backend runs in the background (a commit listener) and closes its
    /// connections; the backend is not used afterwards. Default: nothing to stop.
    func close() async
}

extension StorageBackend {
    /// `readAsync` of a query that reads nothing beyond what `load` names.
    package func readAsync<T: Sendable>(_ load: () -> ReadLoad, _ body: (any StorageReader) throws -> T) async throws -> T {
        try await readAsync(load, then: { _ in ReadLoad() }, body)
    }
}

/// A store that reads and writes in place, synchronously, on the calling thread (LMDB: its
/// memory map; its write transaction on the thread that began it): its zero-copy fast
/// path. The code of this module that only such a store takes — a replay and the opening
/// upgrades on LMDB, `verify`'s in-place checks — reaches it through this protocol; a
/// store whose reads are round trips (PostgreSQL) does not adopt it, so nothing can wait
/// on one of its answers.
package protocol InPlaceStorage: StorageBackend {
    func read<T>(_ body: (any StorageReader) throws -> T) throws -> T
    /// Commits durably before it returns: an acknowledged append is on disk.
    func write<T>(_ body: (any StorageWriter) throws -> T) throws -> T
}

extension InPlaceStorage {
    package func readAsync<T: Sendable>(_ load: () -> ReadLoad, then: (any StorageReader) throws -> ReadLoad,
                                        _ body: (any StorageReader) throws -> T) async throws -> T { try read(body) }
    package func writeAsync<T: Sendable>(_ body: (any StorageWriter) throws -> T) async throws -> T { try write(body) }
    package func writeGroup<T: Sendable>(start: (any StorageReader, StreamsChanged?) throws -> Void, load: () -> StorageLoad,
                                         _ body: (any StorageWriter) throws -> T) async throws -> T {
        try write { w in
            try start(w, nil)
            return try body(w)
        }
    }
}
