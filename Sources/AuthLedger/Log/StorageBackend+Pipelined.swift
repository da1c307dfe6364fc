import AuthLedgerCore
/// Pipelined durable commit, for backends that can commit without making the commit
/// durable yet (LMDB: `MDB_NOMETASYNC`, one fsync per commit instead of two). The
/// group-commit writer acknowledges such a commit only once a later commit's sync, or
/// an explicit `sync()`, made it durable. Other backends commit durably every time.
extension StorageBackend {
    /// A durable `write`: `durable` and `synced` are both true.
    package func writePipelined<T>(_ body: (any StorageWriter) throws -> T) throws -> (value: T, durable: Bool, synced: Bool) {
        (try write(body), true, true)
    }

    /// Nothing to do: every `write` of such a backend is durable when it returns.
    package func sync() throws {}

    /// Nothing to listen to.
    package func listenForCommits(_ onCommit: @escaping @Sendable (Head) -> Void) {}

    /// No reader slots to clear.
    package func clearStaleReaders() throws -> Int { 0 }

    /// Nothing runs in the background.
    package func close() async {}
}
