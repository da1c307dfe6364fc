import AuthLedgerCore

/// Large contiguous runs of the log and of the stored tree, for a backend whose scan is dear
/// per row (PostgreSQL: a network message and a generic decode per row). The replay then
/// scans the log once and hands each run to all its partitions and to its tree check,
/// instead of every partition scanning the whole log (`Ledger+ReplayOnce.swift`); a backend
/// that scans in place (LMDB) does not offer it. The runs are read without any thread
/// waiting for the store (PostgreSQL: its answers awaited), on a connection of their own,
/// in one snapshot.
package protocol AsyncBatchScanning: StorageBackend {
    /// Calls `start` with whether a tree hash is stored outside `0..<storedHashCount(through)`
    /// (a quick check where a count of the hashes would read them all: with every index of
    /// the range read and found, none outside means exactly that count), then `put` with
    /// events `from`…`through` in runs of `run` events (their personal values, and the
    /// stored tree hashes their leaves complete: `LogBatch.treeRange`), in order, until it
    /// returns false, all in one consistent snapshot. The next run's read is in flight while
    /// `put` takes the current one.
    func scanRuns(from: UInt64, through: UInt64, run: Int, start: (Bool) -> Void, put: (LogBatch) -> Bool) async throws
    /// A write transaction that first awaits `work` with the head it locked (a replay's
    /// `scanRuns`, while no other writer can append), then runs `body` with its value; as
    /// `writeGroup`, durable when it returns; `body` reads nothing but what `work` gave it.
    func writeAwaiting<S: Sendable, T: Sendable>(_ work: (Head) async throws -> S,
                                                 _ body: (any StorageWriter, S) throws -> T) async throws -> T
}

/// Events `first..<first + count` of the log as stored, with their personal values.
package struct LogBatch: Sendable {
    package let first: UInt64
    /// Every event's bytes and personal values, one after the other.
    package let data: [UInt8]
    /// Event `first + k`: its bytes in `data`.
    package let events: [Range<Int>]
    /// Event `first + k`: its personal values in `data`, nil when it has none (or they were erased).
    package let personal: [Range<Int>?]
    /// The stored tree hashes of `treeRange(first, count)`, 32 bytes each in index order
    /// (fewer when some are not stored).
    package let tree: [UInt8]

    package init(first: UInt64, data: [UInt8], events: [Range<Int>], personal: [Range<Int>?], tree: [UInt8]) {
        self.first = first
        self.data = data
        self.events = events
        self.personal = personal
        self.tree = tree
    }

    /// The indexes of the tree hashes that the leaves of events `from..<from + count`
    /// complete (hashes are stored in the order they are completed).
    package static func treeRange(from: UInt64, count: Int) -> Range<UInt64> {
        MerkleTree.storedHashCount(from - 1)..<MerkleTree.storedHashCount(from - 1 + UInt64(count))
    }

    var count: Int { events.count }

    /// Calls `body(seq, bytes, personal values)` for each event of the run, in order.
    func forEach(_ body: (UInt64, UnsafeRawBufferPointer, UnsafeRawBufferPointer?) throws -> Void) throws {
        try data.withUnsafeBytes { all in
            for k in events.indices {
                let p = personal[k].map { UnsafeRawBufferPointer(rebasing: all[$0]) }
                try body(first + UInt64(k), UnsafeRawBufferPointer(rebasing: all[events[k]]), p)
            }
        }
    }
}
