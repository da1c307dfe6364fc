import AuthLedgerCore

/// The index log (section 14 of the reference): a second RFC 9162 log, kept in the store's
/// meta values beside the index, whose entry `i` is the 72 bytes `u64be(S) ‖ R_S ‖ I_S` —
/// a log size, the log's root and the user index's root at that size — appended in the
/// transaction that brings the index to `S`. Its tree hashes are stored in the log's
/// stored-index order (`MerkleTree.storedHashIndex`), so the log's proofs, tiles and
/// checkpoints serve it unchanged.
package enum UserIndexLog {
    static let sizeKey = "userindex/log/size"
    static func entryKey(_ i: UInt64) -> String { "userindex/log/entry/" + hex(i) }
    static func treeKey(_ i: UInt64) -> String { "userindex/log/tree/" + hex(i) }
    private static func hex(_ v: UInt64) -> String { String(format: "%016llx", v) }

    /// The 72 bytes of an entry.
    package static func entry(size: UInt64, logRoot: Hash32, indexRoot: Hash32) -> [UInt8] {
        size.bigEndianBytes8 + logRoot.bytes + indexRoot.bytes
    }

    /// How many entries the index log holds.
    static func size(_ r: any StorageReader) throws -> UInt64 {
        guard let b = try r.metaValue(sizeKey) else { return 0 }
        guard b.count == 8 else { throw LedgerError(.tampered, "the index log's size is not 8 bytes") }
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Entry `i` (0-based).
    static func entry(_ r: any StorageReader, _ i: UInt64) throws -> [UInt8] {
        guard let b = try r.metaValue(entryKey(i)), b.count == 72 else {
            throw LedgerError(.tampered, "the index log has no entry \(i)")
        }
        return b
    }

    /// The index log's stored tree hashes.
    static func reader(_ r: any StorageReader) -> MerkleTree.Reader {
        MerkleTree.Reader { index in
            guard let b = try r.metaValue(treeKey(index)), b.count == 32 else {
                let (level, n) = MerkleTree.splitStoredHashIndex(index)
                throw LedgerError(.tampered, "the index log's tree has no hash for level \(level) node \(n)")
            }
            return Hash32(bytes: b)
        }
    }

    /// Appends `entry` and its tree nodes; returns its index.
    @discardableResult
    static func append(_ w: any StorageWriter, _ entry: [UInt8]) throws -> UInt64 {
        let n = try size(w)
        let tree = reader(w)
        var frontier = try TreeFrontier.load(size: n) { level, k in
            try tree.hash(level: level, k).bytes.withUnsafeBytes { TreeFrontier.Node($0) }
        }
        let leaf = MerkleTree.leafHash(entry)
        try leaf.bytes.withUnsafeBytes { b in
            try frontier.append(TreeFrontier.Node(b)) { index, _, node in try w.putMetaValue(treeKey(index), node.hash.bytes) }
        }
        try w.putMetaValue(entryKey(n), entry)
        try w.putMetaValue(sizeKey, (n + 1).bigEndianBytes8)
        return n
    }
}

extension UserIndexLog {
    /// Checks every entry against the log (`verify`): sizes strictly increasing and within
    /// the log, each `R_S` the log's root at `S`, the newest `I_S` the stored index's root,
    /// and the stored tree the one over the entries. A wrong entry names its index and `S`.
    static func check(_ r: any StorageReader, logSize: UInt64, indexRoot: Hash32) throws {
        let n = try size(r)
        guard n > 0 else { return }
        let log = Ledger.treeReader(r)
        var frontier = TreeFrontier()
        var previous: UInt64 = 0
        var last: [UInt8] = []
        for i in 0..<n {
            let e = try entry(r, i)
            let s = e[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            guard s > previous, s <= logSize else {
                throw LedgerError(.tampered, "the index log's entry \(i) (size \(s)) does not follow the one before or is beyond the log", seq: min(s, logSize + 1))
            }
            guard try log.root(s).bytes == Array(e[8..<40]) else {
                throw LedgerError(.tampered, "the index log's entry \(i) (size \(s)) holds another root than the log's", seq: s)
            }
            try MerkleTree.leafHash(e).bytes.withUnsafeBytes { b in frontier.append(TreeFrontier.Node(b)) { _, _, _ in } }
            previous = s
            last = e
        }
        guard Array(last[40..<72]) == indexRoot.bytes else {
            throw LedgerError(.tampered, "the index log's newest entry \(n - 1) (size \(previous)) holds another index root than the stored index", seq: previous)
        }
        guard try reader(r).root(n) == frontier.root else {
            throw LedgerError(.tampered, "the index log's stored tree is not the one over its entries")
        }
    }
}

extension Ledger {
    /// Recomputes every entry of the index log from the log alone (`audit-index`): each
    /// `R_S` as the log's root at `S`, each `I_S` as the root of the index over the users'
    /// streams up to `S` (the streams folded from the events' leaves, the index kept in
    /// memory). Returns how many entries were checked and the newest one's size; a wrong
    /// entry is `tampered` naming its index and `S`.
    package func auditUserIndex() async throws -> (entries: UInt64, size: UInt64) {
        try await read(ReadLoad(meta: [UserIndexLog.sizeKey]), then: { r in
            // Every entry, and the log up to the newest one's size.
            let n = try UserIndexLog.size(r)
            var load = ReadLoad(meta: (0..<n).map(UserIndexLog.entryKey))
            load.log = [(1, .max)]
            return load
        }) { r in try Ledger.auditUserIndex(r) }
    }

    static func auditUserIndex(_ r: any StorageReader) throws -> (entries: UInt64, size: UInt64) {
        let n = try UserIndexLog.size(r)
        let entries = try (0..<n).map { try UserIndexLog.entry(r, $0) }
        func size(_ e: [UInt8]) -> UInt64 { e[0..<8].reduce(0) { $0 << 8 | UInt64($1) } }
        var tree = UserIndexTree(), log = TreeFrontier(), leaves = StoredLeaf()
        var streams: [String: (count: UInt64, head: StreamHead)] = [:]
        var next = 0
        try r.scan(from: 1) { seq, bytes in
            guard next < entries.count else { return false }
            let leaf = try leaves.leafOrDecode(bytes, seq: seq)
            log.append(leaf) { _, _, _ in }
            guard let user = EventCodec.user(bytes) else { throw LedgerError(.tampered, "stored event is not decodable", seq: seq) }
            if !user.isEmpty {
                var s = streams[user] ?? (0, .start)
                s = (s.count + 1, s.head.adding(leaf, seq: seq))
                streams[user] = s
                tree.set(UserIndex.key(user), commitment: s.head.commitment(count: s.count))
            }
            while next < entries.count, size(entries[next]) == seq {
                let e = entries[next]
                guard Array(e[8..<40]) == log.root.bytes else {
                    throw LedgerError(.tampered, "the index log's entry \(next) (size \(seq)) holds another root than the log's", seq: seq)
                }
                guard Array(e[40..<72]) == tree.root().bytes else {
                    throw LedgerError(.tampered, "the index log's entry \(next) (size \(seq)) holds another index root than the users' streams make", seq: seq)
                }
                next += 1
            }
            return true
        }
        guard next == entries.count else {
            throw LedgerError(.tampered, "the index log's entry \(next) (size \(size(entries[next]))) does not follow the one before or is beyond the log")
        }
        return (n, entries.last.map(size) ?? 0)
    }
}
