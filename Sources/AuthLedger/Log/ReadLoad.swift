import AuthLedgerCore

/// What a query reads, named before its body runs (`StorageBackend.read`). A store whose
/// reads are dear (PostgreSQL: a round trip each) loads it in one step, with what the
/// transaction's start reads anyway (the head, the checkpoint); the body then runs once,
/// synchronously, over what was loaded. A store that reads in place (LMDB) never asks.
///
/// Keys name single values (a missing one is loaded as absent); the ranges bring the
/// events they point at along, with their personal values.
package struct ReadLoad {
    package var states: [String] = []
    package var records: [(kind: RecordKind, user: String, id: String)] = []
    package var meta: [String] = []
    /// Whole streams: their index entries and their events.
    package var streams: [String] = []
    /// A stream's entries whose seq is after `after` (`scanStream(_:afterSeq:_:)`), at most
    /// `limit`, and their events.
    package var streamsAfter: [(stream: String, after: UInt64, limit: Int)] = []
    /// The events from `from` on, at most `limit`.
    package var log: [(from: UInt64, limit: Int)] = []
    /// Stored Merkle tree hashes by stored index (`MerkleTree.storedHashIndex`).
    package var tree: [Range<UInt64>] = []
    /// The projection states from a key on (`scanProjectionStates(from:_:)`), at most
    /// `limit`, each with its stream's latest index entry.
    package var statesFrom: (key: String, limit: Int)?
    /// Every projection state (`scanProjectionStates(_:)`).
    package var allStates = false
    /// The count of stored Merkle tree hashes (`treeHashCount()`).
    package var treeSize = false
    /// Every meta value whose key starts with one of these (`verify`: the user index and its log).
    package var metaPrefixes: [String] = []
    /// Every record (`record(_:user:id:)`; `verify` compares each with a replay).
    package var allRecords = false
    /// The index counts (`indexCounts()`) and the records' counts (`recordCount(_:)`).
    package var counts = false

    package init() {}

    package init(states: [String] = [], meta: [String] = [], streams: [String] = []) {
        self.states = states
        self.meta = meta
        self.streams = streams
    }

    /// The stored tree indexes that `use` reads through a `MerkleTree.Reader`, found by a
    /// run over zero hashes (the tree's reads depend on the sizes and indexes asked for,
    /// never on the hashes read); a run that throws names what it read until then.
    package static func treeIndexes(_ use: (MerkleTree.Reader) throws -> Void) -> [UInt64] {
        let seen = IndexRecorder()
        try? use(MerkleTree.Reader { index in
            seen.indexes.append(index)
            return .zero
        })
        return seen.indexes
    }
}

/// The indexes a dry run of a tree read asked for (`ReadLoad.treeIndexes`).
private final class IndexRecorder {
    var indexes: [UInt64] = []
}
