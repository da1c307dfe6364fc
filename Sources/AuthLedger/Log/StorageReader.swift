import AuthLedgerCore

/// Read access to a storage backend, inside one consistent snapshot.
///
/// The protocol is deliberately narrow — positions, ids, stream indexes and opaque
/// projection state — so that a second backend (PostgreSQL) can implement it; all
/// rules, hashing and projections live above it.
package protocol StorageReader {
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
    /// Visits the projection states of the streams whose key is `from` or after it, in the
    /// order of the keys' UTF-8 bytes, until `body` returns false: a seek and a short walk of
    /// the key index (a page of users, `Ledger.users`), never a scan of every state. A
    /// backend may read the streams' latest index entries along (`seq(stream:version:)`).
    func scanProjectionStates(from: String, _ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws
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
    /// Visits `(version, seq)` of one stream's entries whose `seq` is after `after`, in version
    /// order, until `body` returns false (a page of a history, a user's feed). Default: a
    /// logarithmic search of the stream index for the first one, then `scanStream(_:fromVersion:_:)`.
    func scanStream(_ stream: String, afterSeq after: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws
    /// The Merkle tree hash stored at `index` (`MerkleTree.storedHashIndex` order), passed to `body`.
    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T
    /// How many Merkle tree hashes are stored.
    func treeHashCount() throws -> UInt64
    /// Visits the stored Merkle tree hashes with index >= `from` in index order until `body` returns false.
    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws
}

extension StorageReader {
    package func scanStream(_ stream: String, afterSeq after: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try scanStream(stream, fromVersion: try firstVersion(stream, afterSeq: after), body)
    }

    /// The first version of `stream` whose `seq` is greater than `after`: versions and seqs
    /// grow together, so a galloping then binary search over the stream index finds it.
    package func firstVersion(_ stream: String, afterSeq after: UInt64) throws -> UInt64 {
        guard after > 0 else { return 1 }
        // Invariant: version `lo` is at or before `after` (0 stands for "before the stream");
        // version `hi` is after it or past the stream's end.
        var lo: UInt64 = 0, hi: UInt64 = 1
        while let s = try seq(stream: stream, version: hi), s <= after {
            lo = hi
            hi = hi > UInt64.max / 2 ? UInt64.max : hi * 2
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2
            if let s = try seq(stream: stream, version: mid), s <= after { lo = mid } else { hi = mid }
        }
        return lo + 1
    }
}
