import AuthLedgerCore

/// A storage backend. `write` commits durably before it returns: an acknowledged append is on disk.
@_spi(Storage) public protocol StorageBackend: AnyObject, Sendable {
    func read<T>(_ body: (any StorageReader) throws -> T) throws -> T
    func write<T>(_ body: (any StorageWriter) throws -> T) throws -> T
    /// Makes sure nothing deleted remains anywhere in the store's files (after an erasure).
    func purgeDeleted() throws
    /// `write` whose commit may return before it is durable (pipelined commit, see
    /// `StorageBackend+Pipelined.swift`); `synced` tells whether this commit made every
    /// earlier commit durable. Default: `write`, durable.
    func writePipelined<T>(_ body: (any StorageWriter) throws -> T) throws -> (value: T, durable: Bool, synced: Bool)
    /// Makes every commit so far durable. Default: nothing to do.
    func sync() throws
}
