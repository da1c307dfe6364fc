import CLMDB
import Foundation

/// An LMDB failure, with the C return code kept so callers can tell them apart.
public struct LMDBError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let operation: String

    public var description: String {
        "lmdb \(operation): \(String(cString: mdb_strerror(code))) (\(code))"
    }

    public var isMapFull: Bool { code == MDB_MAP_FULL }
    public var isMapResized: Bool { code == MDB_MAP_RESIZED }

    @inline(__always)
    static func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws {
        if rc != 0 { throw LMDBError(code: rc, operation: operation()) }
    }
}

/// A named database inside an environment (an `MDB_dbi`).
public struct Database: Sendable, Hashable {
    public let handle: MDB_dbi
}

/// An LMDB environment: one directory holding `data.mdb` and `lock.mdb`.
///
/// Read transactions use `MDB_NOTLS`, so they are not tied to a thread. Write
/// transactions run synchronously on the calling thread and are never held across
/// an `await`. The map grows when a write hits `MDB_MAP_FULL`: the write is
/// aborted, the map doubled while no transaction of this process is open, and the
/// body run again, so a write body must not leave effects outside the transaction.
public final class Environment: @unchecked Sendable {
    let env: OpaquePointer
    public let path: String
    private var resizeLock = pthread_rwlock_t()
    private let databasesLock = NSLock()
    private var databases: [String: Database] = [:]

    /// Opens (creating if needed) the environment in directory `path`.
    public init(path: String, maxDatabases: Int = 16, initialMapSize: Int = 1 << 30) throws {
        self.path = path
        var env: OpaquePointer?
        try LMDBError.check(mdb_env_create(&env), "env_create")
        self.env = env!
        pthread_rwlock_init(&resizeLock, nil)
        do {
            try LMDBError.check(mdb_env_set_maxdbs(self.env, MDB_dbi(maxDatabases)), "set_maxdbs")
            try LMDBError.check(mdb_env_set_maxreaders(self.env, 1024), "set_maxreaders")
            try LMDBError.check(mdb_env_set_mapsize(self.env, initialMapSize), "set_mapsize")
            try LMDBError.check(mdb_env_open(self.env, path, UInt32(MDB_NOTLS), 0o600), "env_open")
        } catch {
            mdb_env_close(self.env)
            throw error
        }
    }

    deinit {
        mdb_env_close(env)
        pthread_rwlock_destroy(&resizeLock)
    }

    /// The current size of the memory map in bytes.
    public var mapSize: Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_mapsize
    }

    /// Flushes the data buffers to disk (used after bulk loads that skipped syncs).
    public func sync() throws {
        try LMDBError.check(mdb_env_sync(env, 1), "env_sync")
    }

    /// Opens or creates the named database, caching the handle.
    public func database(_ name: String) throws -> Database {
        databasesLock.lock()
        defer { databasesLock.unlock() }
        if let db = databases[name] { return db }
        var dbi: MDB_dbi = 0
        try write { txn in
            try LMDBError.check(mdb_dbi_open(txn.txn, name, UInt32(MDB_CREATE), &dbi), "dbi_open \(name)")
        }
        let db = Database(handle: dbi)
        databases[name] = db
        return db
    }

    /// Runs `body` in a read-only transaction.
    public func read<T>(_ body: (Transaction) throws -> T) throws -> T {
        while true {
            pthread_rwlock_rdlock(&resizeLock)
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn)
            if rc == MDB_MAP_RESIZED {
                pthread_rwlock_unlock(&resizeLock)
                try adoptResize()
                continue
            }
            defer { pthread_rwlock_unlock(&resizeLock) }
            try LMDBError.check(rc, "txn_begin(read)")
            let t = Transaction(txn: txn!, readOnly: true)
            defer { mdb_txn_abort(txn) }
            return try body(t)
        }
    }

    /// Runs `body` in a write transaction and commits it durably when it returns.
    /// Throwing from `body` aborts the transaction. `MDB_MAP_FULL` grows the map and
    /// runs `body` again.
    public func write<T>(_ body: (Transaction) throws -> T) throws -> T {
        while true {
            pthread_rwlock_rdlock(&resizeLock)
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, nil, 0, &txn)
            if rc == MDB_MAP_RESIZED {
                pthread_rwlock_unlock(&resizeLock)
                try adoptResize()
                continue
            }
            guard rc == 0 else {
                pthread_rwlock_unlock(&resizeLock)
                throw LMDBError(code: rc, operation: "txn_begin(write)")
            }
            let t = Transaction(txn: txn!, readOnly: false)
            do {
                let result = try body(t)
                try LMDBError.check(mdb_txn_commit(txn), "txn_commit")
                pthread_rwlock_unlock(&resizeLock)
                return result
            } catch let error as LMDBError where error.isMapFull {
                mdb_txn_abort(txn)
                pthread_rwlock_unlock(&resizeLock)
                try grow()
            } catch {
                mdb_txn_abort(txn)
                pthread_rwlock_unlock(&resizeLock)
                throw error
            }
        }
    }

    private func grow() throws {
        pthread_rwlock_wrlock(&resizeLock)
        defer { pthread_rwlock_unlock(&resizeLock) }
        let size = mapSize
        try LMDBError.check(mdb_env_set_mapsize(env, size * 2), "set_mapsize(grow)")
    }

    private func adoptResize() throws {
        pthread_rwlock_wrlock(&resizeLock)
        defer { pthread_rwlock_unlock(&resizeLock) }
        try LMDBError.check(mdb_env_set_mapsize(env, 0), "set_mapsize(adopt)")
    }
}

/// A transaction; valid only inside the closure that received it.
public struct Transaction {
    let txn: OpaquePointer
    public let readOnly: Bool

    /// Begins a nested write transaction: its writes become part of this one on
    /// `commit()`, and vanish on `abort()`, leaving this one as it was.
    public func beginChild() throws -> Transaction {
        var child: OpaquePointer?
        try LMDBError.check(mdb_txn_begin(mdb_txn_env(txn), txn, 0, &child), "txn_begin(child)")
        return Transaction(txn: child!, readOnly: false)
    }

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

    /// Positions at the first key greater than or equal to `key`.
    public func seek(_ key: [UInt8]) throws -> Entry? {
        try key.withUnsafeBytes { try op(MDB_SET_RANGE, key: $0) }
    }
}

extension UnsafeRawBufferPointer {
    /// Reads a big-endian UInt64 at `offset`.
    @inline(__always)
    public func loadBigEndianUInt64(at offset: Int = 0) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}

extension UInt64 {
    /// The 8 big-endian bytes, so keys sort numerically in LMDB.
    @inline(__always)
    public var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: self.bigEndian) { Array($0) }
    }
}
