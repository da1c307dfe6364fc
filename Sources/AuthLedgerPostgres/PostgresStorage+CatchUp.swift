import AuthLedgerCore
import NIOCore
import PostgresNIO

/// What this process's last write transaction left, for the next one (see `catchUp`).
struct PostgresKept: Sendable {
    /// The head it committed.
    var head: Head
    /// The projections' generation then (a rebuild by any server changes it).
    var generation: [UInt8]?
    /// The Merkle tree's frontier for `head` (stored index → hash); nil when not known.
    var hashes: [UInt64: [UInt8]]?
}

/// Catching up at the start of a write, in the round trip of BEGIN and the head's lock: one
/// statement reads the projections' generation (which the writer asks for first), the tree
/// hashes stored since this process's last commit, and the streams appended to since then
/// (by another server: two servers on one database). With them the write needs no
/// frontier read (the new frontier is the kept one's left part and the hashes since:
/// a block of the new tree that ends before the old size is one of the old frontier's),
/// and the writer keeps every cached user state but those of the streams named
/// (`StreamsChanged`, given to a group's `start`). The statement runs after the lock is held, in its
/// own snapshot (READ COMMITTED): it sees every commit before this transaction's turn.
extension PostgresStorage {
    /// At most this many hashes and streams are caught up with; beyond, the frontier is
    /// read (one statement) and the writer's whole cache dropped.
    static let catchUpLimit = 8_192

    func catchUpStatement(_ kept: PostgresKept?) -> PostgresStatement {
        // The tiles of the hashes `from ..< from + catchUpLimit + 1` (cut in `applyCatchUp`),
        // when another server moved the head (else nothing is stored since).
        let tiles = kept.map { PostgresStorage.catchUpRange($0) } ?? 0..<0
        return PostgresStatement("""
            SELECT 0::int2, 0::int8, value FROM \(tables.meta) WHERE key = $1
            UNION ALL (SELECT 1::int2, tile, hashes FROM \(tables.tiles)
                       WHERE tile >= $3 AND tile <= $4 AND EXISTS (SELECT 1 FROM \(tables.head) WHERE seq > $2) ORDER BY tile)
            UNION ALL (SELECT DISTINCT 2::int2, 0::int8, stream FROM \(tables.events) WHERE seq > $2 LIMIT \(Self.catchUpLimit + 1))
            """, doing: "catch up") { b in
            b.append(PostgresAccess.text(PostgresStorage.generationKey))
            b.append(kept.map { PostgresAccess.int($0.head.seq) } ?? Int64.max)
            b.append(tiles.isEmpty ? Int64(1) : Int64(tiles.lowerBound / PostgresTiles.width))
            b.append(tiles.isEmpty ? Int64(0) : Int64((tiles.upperBound - 1) / PostgresTiles.width))
        }
    }

    /// The stored indexes the catch-up reads after `kept`: every one since, up to one past the limit.
    static func catchUpRange(_ kept: PostgresKept) -> Range<UInt64> {
        let from = MerkleTree.storedHashCount(kept.head.seq)
        return from..<(from + UInt64(catchUpLimit + 1))
    }

    /// Gives `access` what the catch-up statement answered, for the locked `head`.
    func applyCatchUp(_ rows: [PostgresRow], kept: PostgresKept?, head: Head?, to access: PostgresAccess) throws {
        var generation: [UInt8]?
        var tiles: [(tile: UInt64, hashes: ByteBuffer)] = []
        var streams: Set<String> = []
        for (kind, index, bytes) in try PostgresRows.decode(rows, (Int16, Int64, ByteBuffer).self, doing: "catch up") {
            switch kind {
            case 0: generation = Array(bytes.readableBytesView)
            case 1: tiles.append((UInt64(bitPattern: index), bytes))
            default: streams.insert(String(decoding: bytes.readableBytesView, as: UTF8.self))
            }
        }
        access.cache.meta[PostgresStorage.generationKey] = .some(generation)
        // (At the kept seq but not the kept head: the log is not the one kept, nothing is used.)
        guard let kept, let head, head.seq > kept.head.seq || head == kept.head else { return }
        var tree: [UInt64: [UInt8]] = [:]
        try PostgresTiles.forEach(tiles, in: Self.catchUpRange(kept)) { tree[$0] = Array($1) }
        if streams.count <= Self.catchUpLimit { access.changedSince = (kept.head, streams) }
        guard let hashes = kept.hashes, kept.generation == generation, tree.count <= Self.catchUpLimit else { return }
        var frontier: [UInt64: [UInt8]] = [:]
        for index in PostgresAccess.frontierIndexes(head.seq) {
            guard let h = hashes[index] ?? tree[index] else { return }
            frontier[index] = h
        }
        access.cache.tree.rows = frontier
        access.cache.frontier = true
    }
}
