import AuthLedgerCore
import CLMDB
import LMDB

/// The Merkle tree's stored hashes in the `tree` database: key the stored hash index
/// (8 bytes, big-endian), value the 32-byte hash. Indexes only grow, so every put is
/// an `MDB_APPEND` at the end of the B-tree.
extension LMDBAccess {
    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        var key = index.bigEndian
        return try withUnsafeBytes(of: &key) { k in
            // (A write transaction's cursors end with it: those look up afresh.)
            guard txn.readOnly else { return try body(try txn.get(s.tree, k)) }
            if treeCursor == nil { treeCursor = try txn.cursor(s.tree) }
            return try body(try treeCursor!.find(k))
        }
    }

    func treeHashCount() throws -> UInt64 { UInt64(try txn.count(s.tree)) }

    func appendTreeHash(_ index: UInt64, _ hash: UnsafeRawBufferPointer) throws {
        var key = index.bigEndian
        try withUnsafeBytes(of: &key) { k in try txn.put(s.tree, k, hash, flags: UInt32(MDB_APPEND)) }
    }

    func clearTree() throws { try txn.clear(s.tree) }

    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try scanNumbered(s.tree, from: from, keyName: "Merkle tree key", body)
    }
}
