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
    /// `scanRuns`, while no other writer can append), then loads what `load` names over its
    /// value (as a `writeGroup`'s load step: one round trip, none when it names nothing),
    /// then runs `body` with its value; as `writeGroup`, durable when it returns; `body`
    /// reads nothing but what `work` gave it and `load` loaded.
    func writeAwaiting<S: Sendable, T: Sendable>(_ work: (Head) async throws -> S, load: (S) -> StorageLoad,
                                                 _ body: (any StorageWriter, S) throws -> T) async throws -> T
    /// Runs `body` over one consistent snapshot read in awaited steps (`SnapshotReading`:
    /// `verify`), on a connection of its own; no thread waits for the store.
    func snapshot<T: Sendable>(_ body: (any SnapshotReading) async throws -> T) async throws -> T
}

extension AsyncBatchScanning {
    /// `writeAwaiting` whose body reads nothing but what `work` gave it.
    package func writeAwaiting<S: Sendable, T: Sendable>(_ work: (Head) async throws -> S,
                                                         _ body: (any StorageWriter, S) throws -> T) async throws -> T {
        try await writeAwaiting(work, load: { _ in StorageLoad() }, body)
    }
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

/// One consistent snapshot of a store whose reads are dear, read in awaited steps
/// (`AsyncBatchScanning.snapshot`, for `verify`): what each step loads is kept in
/// `loaded`, which answers from it alone (a read of anything not loaded is refused,
/// never fetched), and a scan of the log hands over one run at a time.
package protocol SnapshotReading: AnyObject {
    /// What was loaded so far, with the head and the checkpoint as of the snapshot.
    var loaded: any StorageReader { get }
    /// Loads what `load` names into `loaded`, in one round trip.
    func load(_ load: ReadLoad) async throws
    /// Calls `put` with the stored events of seqs `from`, `from + run`, … in runs of `run`
    /// seqs (`IndexedRun`), in order, up to the last stored seq or until it returns false.
    /// The next run's read is in flight while `put` takes the current one.
    func indexedRuns(from: UInt64, run: Int, _ put: (IndexedRun) throws -> Bool) async throws
}

/// The stored events of seqs `first..<first + span`, as stored (a gap is a seq missing):
/// each with its personal values and the keys its index entries carry — on PostgreSQL the
/// id and stream indexes are unique indexes over the row's own `id`, `stream` and
/// `version`, so an entry points at the event exactly when they are the event's — and the
/// stored tree hashes of `LogBatch.treeRange(from: max(first, 1), count: span)`, those the
/// leaves of the run's seqs complete.
package struct IndexedRun: Sendable {
    package struct Event: Sendable {
        package let seq: UInt64
        /// The event's bytes, its personal values (nil: none), its id and its stream in `data`.
        package let bytes: Range<Int>
        package let personal: Range<Int>?
        package let id: Range<Int>
        package let stream: Range<Int>
        package let version: UInt64

        package init(seq: UInt64, bytes: Range<Int>, personal: Range<Int>?, id: Range<Int>, stream: Range<Int>, version: UInt64) {
            (self.seq, self.bytes, self.personal, self.id, self.stream, self.version) = (seq, bytes, personal, id, stream, version)
        }
    }

    package let data: [UInt8]
    package let events: [Event]
    /// The tree hashes of `treeIndexes`, 32 bytes each in index order (zeros where none is
    /// stored), and which are stored.
    package let treeIndexes: Range<UInt64>
    package let tree: [UInt8]
    package let stored: [Bool]

    package init(data: [UInt8], events: [Event], treeIndexes: Range<UInt64>, tree: [UInt8], stored: [Bool]) {
        (self.data, self.events, self.treeIndexes, self.tree, self.stored) = (data, events, treeIndexes, tree, stored)
    }

    /// Calls `body(seq, bytes, personal values, id, stream, version)` for each event, in seq order.
    func forEach(_ body: (UInt64, UnsafeRawBufferPointer, UnsafeRawBufferPointer?, UnsafeRawBufferPointer, UnsafeRawBufferPointer, UInt64) throws -> Void) throws {
        try data.withUnsafeBytes { all in
            for e in events {
                try body(e.seq, UnsafeRawBufferPointer(rebasing: all[e.bytes]), e.personal.map { UnsafeRawBufferPointer(rebasing: all[$0]) },
                         UnsafeRawBufferPointer(rebasing: all[e.id]), UnsafeRawBufferPointer(rebasing: all[e.stream]), e.version)
            }
        }
    }

    /// The stored tree hash at `index` passed to `body` (nil: none stored); an index outside the run's is refused.
    func withTreeHash(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> Void) throws {
        guard treeIndexes.contains(index) else {
            throw LedgerError(.storageError, "a run of the log asked for tree hash \(index), which it did not load")
        }
        let k = Int(index - treeIndexes.lowerBound)
        guard stored[k] else { return try body(nil) }
        try tree.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[(32 * k)..<(32 * k + 32)])) }
    }
}
