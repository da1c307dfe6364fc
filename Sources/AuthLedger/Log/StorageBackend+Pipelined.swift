/// Pipelined durable commit, for backends that can commit without making the commit
/// durable yet (LMDB: `MDB_NOMETASYNC`, one fsync per commit instead of two). The
/// group-commit writer acknowledges such a commit only once a later commit's sync, or
/// an explicit `sync()`, made it durable. Other backends commit durably every time.
extension StorageBackend {
    public func writePipelined<T>(_ body: (any StorageWriter) throws -> T) throws -> (value: T, durable: Bool, synced: Bool) {
        (try write(body), true, true)
    }

    public func sync() throws {}
}
