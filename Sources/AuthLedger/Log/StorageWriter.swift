import AuthLedgerCore

/// Write access inside one durable transaction.
package protocol StorageWriter: StorageReader {
    /// Stores one event at `seq` with its indexes; `seq` must be head + 1.
    func putEvent(seq: UInt64, id: EventID, stream: String, version: UInt64, bytes: [UInt8]) throws
    func setHead(_ head: Head) throws
    func putProjectionState(_ key: String, _ bytes: [UInt8]) throws
    /// Removes every projection state: from here on the transaction reads only the states
    /// it puts again (a rebuild puts them all). A savepoint that fails undoes its puts.
    func clearProjectionStates() throws
    /// Stores (replaces) a user's record; written in the transaction of the event that changed it.
    func putRecord(_ kind: RecordKind, user: String, id: String, _ bytes: [UInt8]) throws
    /// Removes every record (a rebuild writes them again).
    func clearRecords() throws
    func setCheckpoint(_ seq: UInt64) throws
    func putMetaValue(_ key: String, _ bytes: [UInt8]?) throws
    /// Stores the personal values of the event at `seq` of `user`, in the same transaction as the event.
    func putPersonalValues(user: String, seq: UInt64, _ bytes: [UInt8]) throws
    /// Destroys the personal values of `user`'s events with `seq < before`; returns the seqs of the records.
    func erasePersonalValues(user: String, before: UInt64) throws -> [UInt64]
    /// Stores the 32-byte Merkle tree hash at `index`, which follows every stored one.
    func appendTreeHash(_ index: UInt64, _ hash: UnsafeRawBufferPointer) throws
    /// Removes every Merkle tree hash (before a rebuild).
    func clearTree() throws
    /// Runs `body` so that a throw undoes only what `body` wrote (a nested transaction).
    func savepoint<T>(_ body: () throws -> T) throws -> T
}

extension StorageWriter {
    /// Appends a Merkle node at its stored index (`TreeFrontier.append` gives both).
    func appendTreeHash(_ index: UInt64, _ node: TreeFrontier.Node) throws {
        try node.withUnsafeBytes { try appendTreeHash(index, $0) }
    }
}
