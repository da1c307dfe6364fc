import AuthLedgerCore
/// The log's head: the last `seq` and its chain hash (seq 0 and zero hash when empty).
public struct Head: Equatable, Sendable {
    /// The last `seq` (0 for an empty log).
    public var seq: UInt64
    /// The chain hash of the event at `seq` (zero for an empty log).
    public var hash: Hash32
    /// The head of an empty log.
    public static let empty = Head(seq: 0, hash: .zero)
}

/// Read access to a storage backend, inside one consistent snapshot.
///
/// The protocol is deliberately narrow — positions, ids, stream indexes and opaque
/// projection state — so that a second backend (PostgreSQL) can implement it; all
/// rules, hashing and projections live above it.
@_spi(Storage) public protocol StorageReader {
    func head() throws -> Head
    /// The raw stored bytes of the event at `seq`, passed to `body` (valid only inside it).
    func withEventBytes<T>(_ seq: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T
    func seq(forId id: EventID) throws -> UInt64?
    /// Visits the stored events with `seq >= from` in order until `body` returns false.
    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws
    /// Visits `(version, seq)` of one stream in version order until `body` returns false.
    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws
    /// The seq stored for `version` of `stream` in the stream index.
    func seq(stream: String, version: UInt64) throws -> UInt64?
    func projectionState(_ key: String) throws -> [UInt8]?
    /// Visits every projection state key (the streams with maintained state).
    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws
    func checkpoint() throws -> UInt64
    func metaValue(_ key: String) throws -> [UInt8]?
    /// Number of entries in each index (for `verify`).
    func indexCounts() throws -> (events: Int, ids: Int, streams: Int)
    /// The disclosed personal values of the event at `seq` of `user` (SPEC 1.5), kept
    /// apart from the event's bytes; nil when it has none or they were erased.
    func personalValues(user: String, seq: UInt64) throws -> [UInt8]?
    /// Visits `(seq, record)` of every stored personal-values record of `user`.
    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws
    /// The stored bytes of a user's challenge, OTP or grant record (see `RecordKind`).
    func record(_ kind: RecordKind, user: String, id: String) throws -> [UInt8]?
    /// Number of stored records of `kind`, all users together (for `verify`).
    func recordCount(_ kind: RecordKind) throws -> Int
    /// Visits `(version, seq)` of one stream from `version` on, in version order, until `body` returns false.
    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws
    /// The Merkle tree hash stored at `index` (`MerkleTree.storedHashIndex` order), passed to `body`.
    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T
    /// How many Merkle tree hashes are stored.
    func treeHashCount() throws -> UInt64
    /// Visits the stored Merkle tree hashes with index >= `from` in index order until `body` returns false.
    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws
}

/// Write access inside one durable transaction.
@_spi(Storage) public protocol StorageWriter: StorageReader {
    /// Stores one event at `seq` with its indexes; `seq` must be head + 1.
    func putEvent(seq: UInt64, id: EventID, stream: String, version: UInt64, bytes: [UInt8]) throws
    func setHead(_ head: Head) throws
    func putProjectionState(_ key: String, _ bytes: [UInt8]) throws
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

/// A storage failure that may spoil the whole write transaction it happened in (a full
/// map, a broken environment), as opposed to one request's own failure: the group-commit
/// writer then fails the transaction instead of answering only that request.
public protocol TransactionFailure: Error {
    var spoilsTransaction: Bool { get }
}
