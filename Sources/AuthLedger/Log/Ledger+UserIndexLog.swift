import AuthLedgerCore

/// The index log served like the log (section 14 of the reference): its tree head, signed
/// checkpoint (origin `<origin>/users`, the log's key), proofs, hash tiles and entry bundles.
extension Ledger {
    /// The index log's origin: the log's (`origin`, else the configured one) and `/users`.
    public func usersOrigin(_ origin: String? = nil) -> String { (origin ?? configuration.effectiveOrigin) + "/users" }

    /// The signer of the index log's checkpoints: the log's key under the index log's origin.
    public func usersCheckpointSigner(origin: String? = nil) throws -> CheckpointSigner {
        try checkpointSigner(origin: usersOrigin(origin))
    }

    /// Whether the log has grown since the index log's newest entry.
    package func userIndexLags() async throws -> Bool {
        try await read(ReadLoad(meta: [UserIndexPages.stateKey])) { r in try r.head().seq > UserIndexPages.position(r).size }
    }

    /// The size (entries) and root of the index log's tree (of `size` entries, default all).
    public func usersTreeHead(size: UInt64? = nil) async throws -> (size: UInt64, root: Hash32) {
        try await readIndexLog(then: { r in
            let n = try Ledger.checkedSize(size, head: try UserIndexLog.size(r))
            return UserIndexLog.treeLoad { _ = try $0.root(n) }
        }) { r in
            let n = try Ledger.checkedSize(size, head: try UserIndexLog.size(r))
            return (n, try UserIndexLog.reader(r).root(n))
        }
    }

    /// The signed checkpoint of the index log (of `size` entries, default all).
    public func usersCheckpoint(size: UInt64? = nil, signer: CheckpointSigner) async throws -> String {
        let (n, root) = try await usersTreeHead(size: size)
        return try signer.sign(size: n, root: root)
    }

    /// Entry `index` (0-based) of the index log: `u64be(S) ‖ R_S ‖ I_S`.
    public func usersEntry(_ index: UInt64) async throws -> [UInt8] {
        try await read(ReadLoad(meta: [UserIndexLog.sizeKey, UserIndexLog.entryKey(index)])) { r in
            guard index < (try UserIndexLog.size(r)) else { throw LedgerError(.notFound, "the index log has no entry \(index)") }
            return try UserIndexLog.entry(r, index)
        }
    }

    /// The inclusion proof of entry `index` in the index log of `size` entries (default all).
    public func usersInclusionProof(index: UInt64, size: UInt64? = nil) async throws -> InclusionProof {
        try await readIndexLog(then: { r in
            let n = try Ledger.checkedSize(size, head: try UserIndexLog.size(r))
            guard index < n else { return ReadLoad() }
            return UserIndexLog.treeLoad { t in _ = try (t.hash(level: 0, index), t.inclusionProof(index, n), t.root(n)) }
        }) { r in
            let n = try Ledger.checkedSize(size, head: try UserIndexLog.size(r))
            guard index < n else { throw LedgerError.invalid("the entry index must be below the tree size \(n)", field: "index") }
            let t = UserIndexLog.reader(r)
            return InclusionProof(treeSize: n, leafIndex: index, leafHash: try t.hash(level: 0, index),
                                  proof: try t.inclusionProof(index, n), root: try t.root(n))
        }
    }

    /// The consistency proof between two sizes of the index log (1 ≤ from ≤ to ≤ entries).
    public func usersConsistencyProof(from: UInt64, to: UInt64) async throws -> ConsistencyProof {
        try await readIndexLog(then: { r in
            guard to <= (try UserIndexLog.size(r)), from >= 1, from <= to else { return ReadLoad() }
            return UserIndexLog.treeLoad { t in _ = try (t.root(from), t.root(to), t.consistencyProof(from, to)) }
        }) { r in
            let n = try UserIndexLog.size(r)
            guard to <= n else { throw LedgerError.invalid("size \(to) is beyond the index log's \(n) entries", field: "to") }
            guard from >= 1, from <= to else { throw LedgerError.invalid("the old size must be between 1 and the new size \(to)", field: "from") }
            let t = UserIndexLog.reader(r)
            return ConsistencyProof(oldSize: from, newSize: to, oldRoot: try t.root(from), newRoot: try t.root(to),
                                    proof: try t.consistencyProof(from, to))
        }
    }

    /// Hash tile `level`/`index` of width `width` of the index log (C2SP tlog-tiles).
    public func usersHashTile(level: Int, index: UInt64, width: Int) async throws -> [UInt8] {
        // (The tree's dry run is made only for a store that loads: see `read`.)
        func load() -> ReadLoad {
            let tree = (try? Ledger.checkTile(level: level, index: index, width: width, size: .max, of: "")) == nil ? ReadLoad()
                : UserIndexLog.treeLoad { _ = try Ledger.hashTile($0, level: level, index: index, width: width) }
            return ReadLoad(meta: [UserIndexLog.sizeKey] + tree.meta)
        }
        return try await read(load()) { r in
            try Ledger.checkTile(level: level, index: index, width: width, size: try UserIndexLog.size(r), of: "index entries")
            return try Ledger.hashTile(UserIndexLog.reader(r), level: level, index: index, width: width)
        }
    }

    /// Entry bundle `index` of width `width` of the index log: each entry's 72 bytes after a big-endian uint16 length.
    public func usersEntryBundle(index: UInt64, width: Int) async throws -> [UInt8] {
        var keys = [UserIndexLog.sizeKey]
        if width >= 1, width <= Ledger.tileWidth, index <= UInt64.max >> UInt64(Ledger.tileHeight + 1) {
            let first = index * UInt64(Ledger.tileWidth)
            keys += (first..<(first + UInt64(width))).map(UserIndexLog.entryKey)
        }
        return try await read(ReadLoad(meta: keys)) { r in
            try Ledger.checkTile(level: 0, index: index, width: width, size: try UserIndexLog.size(r), of: "index entries")
            var out: [UInt8] = []
            let first = index * UInt64(Ledger.tileWidth)
            for i in first..<(first + UInt64(width)) { try Ledger.appendBundleEntry(&out, try UserIndexLog.entry(r, i)) }
            return out
        }
    }
}

extension Ledger {
    /// A read of the index log: its size first, then what `then` names over it.
    func readIndexLog<T: Sendable>(then: (any StorageReader) throws -> ReadLoad,
                                   _ body: (any StorageReader) throws -> T) async throws -> T {
        try await read(ReadLoad(meta: [UserIndexLog.sizeKey]), then: then, body)
    }
}

extension UserIndexLog {
    /// A load of the index log's tree hashes that `use` reads (see `ReadLoad.treeIndexes`).
    static func treeLoad(_ use: (MerkleTree.Reader) throws -> Void) -> ReadLoad {
        ReadLoad(meta: ReadLoad.treeIndexes(use).map(treeKey))
    }
}

extension CheckpointSigner {
    /// The index log's signer (section 14): this key under `<origin>/users`.
    public func forUsers() throws -> CheckpointSigner {
        try CheckpointSigner(origin: origin + "/users", seed: Array(key.rawRepresentation))
    }
}
