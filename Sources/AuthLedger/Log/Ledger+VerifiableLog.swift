import AuthLedgerCore
import Crypto
import Foundation

/// An inclusion proof: the event at `leafIndex + 1` is leaf `leafIndex` of the tree of `treeSize`.
public struct InclusionProof: Sendable, Equatable {
    /// The number of events in the tree the proof is for.
    public var treeSize: UInt64
    /// The event's 0-based leaf index: its `seq` minus 1.
    public var leafIndex: UInt64
    /// The event's leaf hash, `SHA-256(0x00 ‖ C)` (SPEC 1.2).
    public var leafHash: Hash32
    /// The audit path of RFC 6962, from the leaf up.
    public var proof: [Hash32]
    /// The root of the tree of `treeSize` events, which the path leads to.
    public var root: Hash32
}

/// A consistency proof: the tree of `newSize` extends the tree of `oldSize`.
public struct ConsistencyProof: Sendable, Equatable {
    /// The size of the older tree.
    public var oldSize: UInt64
    /// The size of the newer tree.
    public var newSize: UInt64
    /// The root of the tree of `oldSize` events.
    public var oldRoot: Hash32
    /// The root of the tree of `newSize` events.
    public var newRoot: Hash32
    /// The consistency proof of RFC 6962 (empty when the sizes are equal).
    public var proof: [Hash32]
}

/// The verifiable log (SPEC 6): roots, proofs and tiles of the Merkle tree kept beside the events.
extension Ledger {
    /// Tile height of the tile API (C2SP tlog-tiles): 2^8 hashes per tile.
    public static let tileHeight = 8
    /// The number of hashes in a full tile (and of events in a full entry bundle): 256.
    public static let tileWidth = 1 << tileHeight

    /// The size (the head, or `size`) and root of the tree.
    /// Throws `invalid_event` for a `size` beyond the head.
    public func treeHead(size: UInt64? = nil) async throws -> (size: UInt64, root: Hash32) {
        try await read(then: { r in
            let n = try Ledger.checkedSize(size, head: try r.head().seq)
            return Ledger.treeLoad { _ = try $0.root(n) }
        }) { r in try Ledger.treeHead(r, size: size) }
    }

    static func treeHead(_ r: any StorageReader, size: UInt64?) throws -> (size: UInt64, root: Hash32) {
        let n = try Ledger.checkedSize(size, head: try r.head().seq)
        return (n, try Ledger.treeReader(r).root(n))
    }

    /// The inclusion proof of the event `seq` in the tree of `size` (default the head).
    /// Throws `invalid_event` for a `size` beyond the head or a `seq` outside `1…size`.
    public func inclusionProof(seq: UInt64, size: UInt64? = nil) async throws -> InclusionProof {
        try await read(then: { r in
            let n = try Ledger.checkedSize(size, head: try r.head().seq)
            guard seq >= 1, seq <= n else { return ReadLoad() }
            return Ledger.treeLoad { t in _ = try (t.hash(level: 0, seq - 1), t.inclusionProof(seq - 1, n), t.root(n)) }
        }) { r in try Ledger.inclusionProof(r, seq: seq, size: size) }
    }

    static func inclusionProof(_ r: any StorageReader, seq: UInt64, size: UInt64?) throws -> InclusionProof {
        let n = try Ledger.checkedSize(size, head: try r.head().seq)
        guard seq >= 1, seq <= n else {
            throw LedgerError.invalid("seq must be between 1 and the tree size \(n)", field: "seq")
        }
        let t = Ledger.treeReader(r)
        return InclusionProof(treeSize: n, leafIndex: seq - 1, leafHash: try t.hash(level: 0, seq - 1),
                              proof: try t.inclusionProof(seq - 1, n), root: try t.root(n))
    }

    /// The consistency proof from the tree of `from` events to the tree of `to` (1 ≤ from ≤ to ≤ head).
    /// Throws `invalid_event` when the sizes are not in that order.
    public func consistencyProof(from: UInt64, to: UInt64) async throws -> ConsistencyProof {
        try await read(then: { r in
            guard to <= (try r.head().seq), from >= 1, from <= to else { return ReadLoad() }
            return Ledger.treeLoad { t in _ = try (t.root(from), t.root(to), t.consistencyProof(from, to)) }
        }) { r in try Ledger.consistencyProof(r, from: from, to: to) }
    }

    static func consistencyProof(_ r: any StorageReader, from: UInt64, to: UInt64) throws -> ConsistencyProof {
        let head = try r.head().seq
        guard to <= head else { throw LedgerError.invalid("size \(to) is beyond the head (\(head))", field: "to") }
        guard from >= 1, from <= to else {
            throw LedgerError.invalid("the old size must be between 1 and the new size \(to)", field: "from")
        }
        let t = Ledger.treeReader(r)
        return ConsistencyProof(oldSize: from, newSize: to, oldRoot: try t.root(from), newRoot: try t.root(to),
                                proof: try t.consistencyProof(from, to))
    }

    /// Hash tile `level`/`index` of width `width` (C2SP tlog-tiles): the hashes of the
    /// tree's level `8·level` nodes `index·256 …`, 32 bytes each. `not_found` while
    /// the log is too short for it.
    public func hashTile(level: Int, index: UInt64, width: Int) async throws -> [UInt8] {
        try await read(Ledger.hashTileLoad(level: level, index: index, width: width)) { r in
            try Ledger.hashTile(r, level: level, index: index, width: width)
        }
    }

    /// What a hash tile reads (named only for a store that loads: see `read`).
    static func hashTileLoad(level: Int, index: UInt64, width: Int) -> ReadLoad {
        var load = ReadLoad()
        if level == 0, width >= 1, index <= UInt64.max >> UInt64(Ledger.tileHeight + 1) {
            // The leaves' stored indexes and the subtrees they complete between them.
            let first = index * UInt64(Ledger.tileWidth)
            load.tree = [MerkleTree.storedHashIndex(level: 0, first)..<MerkleTree.storedHashIndex(level: 0, first + UInt64(width))]
        } else if level > 0, (try? Ledger.checkTile(level: level, index: index, width: width, size: .max, of: "")) != nil {
            load = Ledger.treeLoad { _ = try Ledger.hashTile($0, level: level, index: index, width: width) }
        }
        return load
    }

    static func hashTile(_ r: any StorageReader, level: Int, index: UInt64, width: Int) throws -> [UInt8] {
        let head = try r.head().seq
        try checkTile(level: level, index: index, width: width, size: head, of: "events")
        let first = index * UInt64(Ledger.tileWidth)
        if level == 0 {
            var out = [UInt8]()
            out.reserveCapacity(32 * width)
            // Leaf hashes lie in stored-index order with the subtrees each one completes
            // between them: one cursor walk instead of a lookup per hash.
            var n = first, next = MerkleTree.storedHashIndex(level: 0, first)
            let end = first + UInt64(width)
            try r.scanTree(from: next) { stored, value in
                guard stored == next else { return stored < next }
                guard value.count == 32 else { return false }
                out.append(contentsOf: value)
                next += 1 + UInt64((~n).trailingZeroBitCount)
                n += 1
                return n < end
            }
            guard n == end else { throw LedgerError(.tampered, "the Merkle tree has no hash for leaf \(n)", seq: n + 1) }
            return out
        }
        return try hashTile(treeReader(r), level: level, index: index, width: width)
    }

    /// Refuses (`not_found`) a tile that a tree of `size` leaves does not have.
    static func checkTile(level: Int, index: UInt64, width: Int, size: UInt64, of what: String) throws {
        let hashLevel = level * Ledger.tileHeight
        guard level >= 0, hashLevel < 64, width >= 1, width <= Ledger.tileWidth,
              index <= (UInt64.max >> UInt64(Ledger.tileHeight)) - 1,
              index * UInt64(Ledger.tileWidth) + UInt64(width) <= size >> UInt64(hashLevel) else {
            throw LedgerError(.notFound, "no such tile in a tree of \(size) \(what)")
        }
    }

    /// The hashes of a checked tile, read from `tree`.
    static func hashTile(_ tree: MerkleTree.Reader, level: Int, index: UInt64, width: Int) throws -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(32 * width)
        let first = index * UInt64(Ledger.tileWidth)
        for k in 0..<UInt64(width) { out += try tree.hash(level: level * Ledger.tileHeight, first + k).bytes }
        return out
    }

    /// Appends one entry of an entry bundle: a big-endian uint16 length and the bytes.
    static func appendBundleEntry(_ out: inout [UInt8], _ c: [UInt8], seq: UInt64? = nil) throws {
        guard c.count <= Int(UInt16.max) else {
            throw LedgerError(.storageError, "an entry is longer than an entry bundle can hold (65535 bytes)", seq: seq)
        }
        out.append(UInt8(c.count >> 8))
        out.append(UInt8(c.count & 0xFF))
        out.append(contentsOf: c)
    }

    /// Entry bundle `index` of width `width`: events `seq` `index·256 + 1 …`, each as a
    /// big-endian uint16 length and the bytes `C` its leaf hashes.
    public func entryBundle(index: UInt64, width: Int) async throws -> [UInt8] {
        var load = ReadLoad()
        if width >= 1, index <= UInt64.max >> UInt64(Ledger.tileHeight + 1) {
            load.log = [(index * UInt64(Ledger.tileWidth) + 1, width)]
        }
        return try await read(load) { r in try Ledger.entryBundle(r, index: index, width: width) }
    }

    static func entryBundle(_ r: any StorageReader, index: UInt64, width: Int) throws -> [UInt8] {
        let head = try r.head().seq
        try checkTile(level: 0, index: index, width: width, size: head, of: "events")
        var out = [UInt8]()
        let first = index * UInt64(Ledger.tileWidth) + 1
        for seq in first..<(first + UInt64(width)) {
            let e = try r.withEventBytes(seq) { b -> RecordedEvent in
                guard let b else { throw LedgerError(.tampered, "event missing", seq: seq) }
                return try EventCodec.decode(b, seq: seq)
            }
            try appendBundleEntry(&out, RecordedEvent.leafInput(e.event, seq: seq, version: e.version), seq: seq)
        }
        return out
    }

    // MARK: Inside the store

    /// A load of the stored tree hashes that `use` reads (see `ReadLoad.treeIndexes`).
    static func treeLoad(_ use: (MerkleTree.Reader) throws -> Void) -> ReadLoad {
        var load = ReadLoad()
        load.tree = ReadLoad.treeIndexes(use).map { $0..<($0 + 1) }
        return load
    }

    static func treeReader(_ r: any StorageReader) -> MerkleTree.Reader {
        MerkleTree.Reader { index in
            try r.withTreeHash(index) { b in
                guard let b, b.count == 32 else {
                    let (level, n) = MerkleTree.splitStoredHashIndex(index)
                    throw LedgerError(.tampered, "the Merkle tree has no hash for level \(level) node \(n)")
                }
                return Hash32(bytes: Array(b))
            }
        }
    }

    static func checkedSize(_ size: UInt64?, head: UInt64) throws -> UInt64 {
        guard let size else { return head }
        guard size <= head else { throw LedgerError.invalid("size \(size) is beyond the head (\(head))", field: "size") }
        return size
    }

    /// Builds the Merkle tree of a store that has none (a store from before the tree).
    /// A tree that is there but does not match is left for `verify` to name and
    /// `replay` to rebuild: opening a store never hides tampering.
    func ensureTree() async throws {
        var load = ReadLoad()
        load.treeSize = true
        let (head, count) = try await storage.readAsync({ load }) { r in (try r.head().seq, try r.treeHashCount()) }
        guard count == 0, head > 0 else { return }
        logger.notice("the store has no Merkle tree; building it", metadata: ["head": "\(head)"])
        guard let scanning = storage as? AsyncBatchScanning else {
            let storage = try inPlace
            return try await writer.exclusive {
                try storage.write { w in
                    let head = try w.head().seq
                    guard try w.treeHashCount() == 0, head > 0 else { return }
                    try Ledger.rebuildTree(w, leaves: try Ledger.leafHashes(w, through: head))
                }
            }
        }
        // PostgreSQL: the write locks the head, the tree's size is read again and the log
        // scanned in runs while it waits (no other writer can append meanwhile).
        try await writer.exclusiveAsync { [self] in
            try await scanning.writeAwaiting({ [self] head -> [UInt8]? in
                var load = ReadLoad()
                load.treeSize = true
                let count = try await storage.readAsync({ load }) { r in try r.treeHashCount() }
                guard count == 0, head.seq > 0 else { return nil }
                return try await Ledger.leafHashes(scanning, through: head.seq)
            }) { w, leaves in
                if let leaves { try Ledger.rebuildTree(w, leaves: leaves) }
            }
        }
    }

    /// `leafHashes` over a store that scans in runs (`AsyncBatchScanning`): no thread waits.
    static func leafHashes(_ scanning: any AsyncBatchScanning, through: UInt64, checkingChain: Bool = false) async throws -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Int(through) * 32)
        var leaves = StoredLeaf()
        var chain = checkingChain ? ChainCheck() : nil
        var failure: (any Error)?
        try await scanning.scanRuns(from: 1, through: through, run: Ledger.replayRun, start: { _ in }) { batch in
            do {
                try batch.forEach { seq, bytes, _ in
                    let leaf = try leaves.leafOrDecode(bytes, seq: seq)
                    try chain?.add(bytes, leaf: leaf, seq: seq)
                    leaf.withUnsafeBytes { out.append(contentsOf: $0) }
                }
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        return out
    }

    /// The leaf hashes of events 1…`through`, 32 bytes each, recomputed from the events.
    /// With `checkingChain`, the hash chain too (`ChainCheck`: a replay does not rebuild the
    /// tree over changed events).
    static func leafHashes(_ r: any StorageReader, through: UInt64, checkingChain: Bool = false) throws -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Int(through) * 32)
        var leaves = StoredLeaf()
        var chain = checkingChain ? try ChainCheck(before: 1, r) : nil
        try r.scan(from: 1) { seq, bytes in
            guard seq <= through else { return false }
            let leaf = try leaves.leafOrDecode(bytes, seq: seq)
            try chain?.add(bytes, leaf: leaf, seq: seq)
            leaf.withUnsafeBytes { out.append(contentsOf: $0) }
            return true
        }
        guard out.count == Int(through) * 32 else { throw LedgerError(.tampered, "event missing", seq: UInt64(out.count / 32) + 1) }
        return out
    }

    /// Replaces the stored tree with the one over `leaves` (32 bytes each). Callers rebuild
    /// only a tree that is missing (opening a store from before the tree) or that
    /// `storedTreeMatchesLog` found different (replay): rewriting an intact one would put
    /// two hashes per event in the transaction's dirty pages (~130 MB at 1M events).
    static func rebuildTree(_ w: any StorageWriter, leaves: [UInt8]) throws {
        try w.clearTree()
        var frontier = TreeFrontier()
        try leaves.withUnsafeBytes { all in
            for k in stride(from: 0, to: all.count, by: 32) {
                let leaf = TreeFrontier.Node(UnsafeRawBufferPointer(rebasing: all[k..<(k + 32)]))
                try frontier.append(leaf) { index, _, node in try w.appendTreeHash(index, node) }
            }
        }
    }
}

extension Ledger {
    /// Whether the stored tree is the one over the log's events through `through`, checked
    /// in chunks of `chunk` events (`storedTreeMatchesLog(_:from:to:)`, one after the other).
    static func storedTreeMatchesLog(_ r: any StorageReader, through: UInt64, chunk: Int = treeCheckChunk) throws -> Bool {
        guard try r.treeHashCount() == MerkleTree.storedHashCount(through) else { return false }
        for (from, to) in treeCheckChunks(through: through, chunk: chunk) {
            guard try storedTreeMatchesLog(r, from: from, to: to) else { return false }
        }
        return true
    }

    /// Events per chunk of the stored tree's check.
    static let treeCheckChunk = 65_536

    /// Events 1…`through` in chunks of `chunk`: (first seq, last seq) each.
    static func treeCheckChunks(through: UInt64, chunk: Int = treeCheckChunk) -> [(UInt64, UInt64)] {
        stride(from: UInt64(1), through: through, by: chunk).map { ($0, min(through, $0 + UInt64(chunk) - 1)) }
    }

    /// Whether the stored hashes that events `from`…`to` complete are the ones those events
    /// give, over the stored tree of the events before them (its right edge read from the
    /// store). Every stored hash is completed by exactly one event, and each is compared with
    /// the hash of the stored children it was made from: so when every chunk of the log
    /// agrees (checked in any order, or at once) and the count of stored hashes is right,
    /// the whole stored tree is the log's. Memory stays at one chunk's hashes; the pages both
    /// walks read are let go behind them.
    /// The hash chain of those events is checked on the way (`ChainCheck`): a break throws
    /// `tampered`, whatever the tree.
    static func storedTreeMatchesLog(_ r: any StorageReader, from: UInt64, to: UInt64) throws -> Bool {
        var frontier: TreeFrontier?
        do { frontier = try TreeFrontier.load(r, size: from - 1) } catch let e as LedgerError where e.code == .tampered { frontier = nil }
        var expected: [(UInt64, TreeFrontier.Node)] = []
        expected.reserveCapacity(2 * Int(to - from + 1) + 64)
        var nextSeq = from
        var leaves = StoredLeaf()
        var chain = try ChainCheck(before: from, r)
        try r.scan(from: from) { seq, bytes in
            guard seq <= to else { return false }
            guard seq == nextSeq else { throw LedgerError(.tampered, "event missing", seq: nextSeq) }
            let leaf = try leaves.leafOrDecode(bytes, seq: seq)
            try chain.add(bytes, leaf: leaf, seq: seq)
            frontier?.append(leaf) { i, _, node in expected.append((i, node)) }
            nextSeq += 1
            return true
        }
        guard nextSeq > to else { throw LedgerError(.tampered, "event missing", seq: nextSeq) }
        guard frontier != nil else { return false }
        var k = 0
        try r.scanTree(from: expected[0].0) { index, stored in
            guard k < expected.count else { return false }
            guard expected[k].0 == index, stored.count == 32, TreeFrontier.Node(stored) == expected[k].1 else { return false }
            k += 1
            return true
        }
        return k == expected.count
    }
}

/// Checks the stored Merkle tree against the leaves during `verify`: every stored hash
/// is recomputed in stored-index order and compared, naming the node that differs. The
/// first difference is kept and reported after the scan, so that a broken chain (named
/// by the chain's own checks) is reported first, as before the tree existed.
struct TreeCheck {
    var frontier = TreeFrontier()
    private(set) var firstError: LedgerError?

    /// Adds the leaf of `seq` and compares each node it completes with the stored hash
    /// `treeHash` passes (nil: none stored).
    mutating func add(_ leaf: TreeFrontier.Node, seq: UInt64, _ treeHash: (UInt64, (UnsafeRawBufferPointer?) throws -> Void) throws -> Void) throws {
        var found: LedgerError?
        try frontier.append(leaf) { index, level, node in
            guard found == nil else { return }
            let n = (seq - 1) >> UInt64(level)
            let first = n << UInt64(level) + 1, last = (n + 1) << UInt64(level)
            try treeHash(index) { b in
                if let b, b.count == 32 {
                    guard TreeFrontier.Node(b) != node else { return }
                    let what = level == 0 ? "leaf hash of the event" : "hash of its children"
                    found = LedgerError(.tampered, "the Merkle tree's \(TreeCheck.name(level, n, first, last)) differs from the \(what)", seq: seq)
                } else {
                    found = LedgerError(.tampered, "the Merkle tree has no \(TreeCheck.name(level, n, first, last))", seq: seq)
                }
            }
        }
        if firstError == nil { firstError = found }
    }

    /// The first difference found, else whether the store holds `treeHashCount` hashes, the log's.
    func finish(treeHashCount: UInt64) throws {
        if let firstError { throw firstError }
        guard treeHashCount == MerkleTree.storedHashCount(frontier.size) else {
            throw LedgerError(.tampered, "the Merkle tree holds hashes beyond the log", seq: frontier.size + 1)
        }
    }

    static func name(_ level: Int, _ n: UInt64, _ first: UInt64, _ last: UInt64) -> String {
        level == 0 ? "leaf \(n) (seq \(first))" : "node at level \(level) index \(n) (seq \(first)–\(last))"
    }
}
