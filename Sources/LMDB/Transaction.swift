import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A transaction; valid only inside the closure that received it.
public struct Transaction {
    let txn: OpaquePointer
    /// What the write transaction (with its nested ones) has put, for `Environment.write`.
    let tally: WriteTally?

    init(txn: OpaquePointer, readOnly: Bool, tally: WriteTally? = nil) {
        self.txn = txn
        self.readOnly = readOnly
        self.tally = tally
    }

    /// This transaction's id (a write transaction's is the last committed one's + 1).
    public var id: Int { Int(mdb_txn_id(txn)) }
    public let readOnly: Bool

    /// Begins a nested write transaction: its writes become part of this one on
    /// `commit()`, and vanish on `abort()`, leaving this one as it was.
    public func beginChild() throws -> Transaction {
        var child: OpaquePointer?
        try LMDBError.check(mdb_txn_begin(mdb_txn_env(txn), txn, 0, &child), "txn_begin(child)")
        return Transaction(txn: child!, readOnly: false, tally: tally)
    }

    /// Commits a nested transaction into its parent. Whether it succeeds or fails, the
    /// handle is gone afterwards (LMDB frees it): never `abort()` after `commit()`.
    public func commit() throws { try LMDBError.check(mdb_txn_commit(txn), "txn_commit(child)") }
    public func abort() { mdb_txn_abort(txn) }

    /// The value stored under `key`, as bytes valid until the transaction ends.
    public func get(_ db: Database, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = mdb_get(txn, db.handle, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try LMDBError.check(rc, "get")
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    public func get(_ db: Database, _ key: [UInt8]) throws -> [UInt8]? {
        try key.withUnsafeBytes { k in try get(db, k).map { Array($0) } }
    }

    public func put(_ db: Database, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, flags: UInt32 = 0) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try LMDBError.check(mdb_put(txn, db.handle, &k, &v, flags), "put")
        tally?.bytes += key.count + value.count
    }

    public func put(_ db: Database, _ key: [UInt8], _ value: [UInt8], append: Bool = false) throws {
        try key.withUnsafeBytes { k in
            try value.withUnsafeBytes { v in
                try put(db, k, v, flags: append ? UInt32(MDB_APPEND) : 0)
            }
        }
    }

    @discardableResult
    public func delete(_ db: Database, _ key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { kb in
            var k = MDB_val(mv_size: kb.count, mv_data: UnsafeMutableRawPointer(mutating: kb.baseAddress))
            let rc = mdb_del(txn, db.handle, &k, nil)
            if rc == MDB_NOTFOUND { return false }
            try LMDBError.check(rc, "del")
            return true
        }
    }

    /// Removes every entry of `db`.
    public func clear(_ db: Database) throws {
        try LMDBError.check(mdb_drop(txn, db.handle, 0), "drop")
    }

    public func cursor(_ db: Database) throws -> Cursor {
        var c: OpaquePointer?
        try LMDBError.check(mdb_cursor_open(txn, db.handle, &c), "cursor_open")
        return Cursor(cursor: c!)
    }

    /// Number of entries in `db`.
    public func count(_ db: Database) throws -> Int {
        var stat = MDB_stat()
        try LMDBError.check(mdb_stat(txn, db.handle, &stat), "stat")
        return stat.ms_entries
    }
}

// @unchecked: one write transaction's counter, used by the thread that runs it only.
/// The bytes a write transaction put: roughly how many dirty pages it made.
final class WriteTally: @unchecked Sendable {
    var bytes = 0
}
