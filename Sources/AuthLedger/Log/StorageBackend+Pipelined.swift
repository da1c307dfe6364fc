import AuthLedgerCore

// What one driver can do and another cannot is a protocol of its own that the driver adopts,
// not a requirement of `StorageBackend` every driver must answer: the ledger asks the store
// whether it has the capability (`storage as? any PipelinedCommits`).

/// Pipelined durable commit, for backends that can commit without making the commit
/// durable yet (LMDB: `MDB_NOMETASYNC`, one fsync per commit instead of two). The
/// group-commit writer acknowledges such a commit only once a later commit's sync, or
/// an explicit `sync()`, made it durable. Other backends commit durably every time (the
/// writer then commits its groups with `writeAsync`).
package protocol PipelinedCommits: StorageBackend {
    /// `write` whose commit may return before it is durable; `synced` tells whether this
    /// commit made every earlier commit durable.
    func writePipelined<T>(_ body: (any StorageWriter) throws -> T) throws -> (value: T, durable: Bool, synced: Bool)
    /// Makes every commit so far durable.
    func sync() throws
}

/// A store that other processes commit to and that tells of it (several servers on one
/// PostgreSQL database). An LMDB store's other processes are not observed: their commits
/// are read on the next query.
package protocol CommitNotifying: StorageBackend {
    /// Calls `onCommit` with the new head whenever another process commits to this store.
    func listenForCommits(_ onCommit: @escaping @Sendable (Head) -> Void)
}

/// A store with reader slots that a process dying inside a read transaction leaves behind (LMDB).
package protocol ReaderSlots: StorageBackend {
    /// Clears the slots of dead processes; returns how many.
    func clearStaleReaders() throws -> Int
}

extension StorageBackend {
    /// Nothing runs in the background.
    package func close() async {}
}
