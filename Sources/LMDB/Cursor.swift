import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A cursor over one database; closed when released.
public final class Cursor {
    let cursor: OpaquePointer
    init(cursor: OpaquePointer) { self.cursor = cursor }
    deinit { mdb_cursor_close(cursor) }

    public typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    private func op(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil) throws -> Entry? {
        var k = MDB_val(mv_size: key?.count ?? 0, mv_data: key.flatMap { UnsafeMutableRawPointer(mutating: $0.baseAddress) })
        var v = MDB_val()
        let rc = mdb_cursor_get(cursor, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try LMDBError.check(rc, "cursor_get")
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    public func first() throws -> Entry? { try op(MDB_FIRST) }
    public func last() throws -> Entry? { try op(MDB_LAST) }
    public func next() throws -> Entry? { try op(MDB_NEXT) }
    public func prev() throws -> Entry? { try op(MDB_PREV) }

    /// The value stored under `key` exactly (MDB_SET), as bytes valid until the transaction
    /// ends. From a cursor already on the page that holds `key` (the last lookup's, when
    /// keys are looked up in ascending order), LMDB searches that page only.
    public func find(_ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        try op(MDB_SET, key: key)?.value
    }

    /// Positions at the first key greater than or equal to `key`.
    public func seek(_ key: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { try op(MDB_SET_RANGE, key: $0) }
    }
}
