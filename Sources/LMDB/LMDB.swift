import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
    var env: OpaquePointer
    public let path: String
    private var resizeLock = pthread_rwlock_t()
    private let databasesLock = NSRecursiveLock()
    private var databases: [String: Database] = [:]
    private let maxDatabases: Int
    /// The store's compaction generation (`compaction.lock`, shared by every process),
    /// and the one this process's environment was opened at (see `compact()`).
    private let generation: StoreGeneration
    private var openedGeneration: UInt64

    /// Opens (creating if needed) the environment in directory `path`.
    public init(path: String, maxDatabases: Int = 16, initialMapSize: Int = 1 << 30) throws {
        self.path = path
        self.maxDatabases = maxDatabases
        let gen = try StoreGeneration(directory: path)
        generation = gen
        let (opened, at) = try gen.withLock(LOCK_SH) {
            (try Environment.open(path: path, maxDatabases: maxDatabases, mapSize: initialMapSize), gen.value)
        }
        env = opened
        openedGeneration = at
        pthread_rwlock_init(&resizeLock, nil)
    }

    private static func open(path: String, maxDatabases: Int, mapSize: Int) throws -> OpaquePointer {
        var env: OpaquePointer?
        try LMDBError.check(mdb_env_create(&env), "env_create")
        do {
            try LMDBError.check(mdb_env_set_maxdbs(env!, MDB_dbi(maxDatabases)), "set_maxdbs")
            try LMDBError.check(mdb_env_set_maxreaders(env!, 1024), "set_maxreaders")
            try LMDBError.check(mdb_env_set_mapsize(env!, mapSize), "set_mapsize")
            try LMDBError.check(mdb_env_open(env!, path, UInt32(MDB_NOTLS), 0o600), "env_open")
        } catch {
            mdb_env_close(env!)
            throw error
        }
        return env!
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
            // A read nested in another transaction of this thread stays on that one's file
            // (reopening would wait for the outer transaction: a deadlock).
            if rc == 0 && generation.value != openedGeneration && TransactionDepth.value == 0 {
                mdb_txn_abort(txn)
                pthread_rwlock_unlock(&resizeLock)
                try reopen()
                continue
            }
            defer { pthread_rwlock_unlock(&resizeLock) }
            try LMDBError.check(rc, "txn_begin(read)")
            let t = Transaction(txn: txn!, readOnly: true)
            defer { mdb_txn_abort(txn) }
            TransactionDepth.value += 1
            defer { TransactionDepth.value -= 1 }
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
            // The store was compacted into a new file by another environment: this one's
            // file is no longer the store's, so reopen before writing anything.
            if generation.value != openedGeneration {
                mdb_txn_abort(txn)
                pthread_rwlock_unlock(&resizeLock)
                guard TransactionDepth.value == 0 else {
                    throw LMDBError(code: MDB_BAD_TXN, operation: "txn_begin(write): the store was compacted under an open transaction")
                }
                try reopen()
                continue
            }
            let t = Transaction(txn: txn!, readOnly: false)
            TransactionDepth.value += 1
            defer { TransactionDepth.value -= 1 }
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

    /// Closes and reopens the environment on the store's current file, with the same
    /// database handles, once no transaction of this process is open.
    private func reopen() throws {
        pthread_rwlock_wrlock(&resizeLock)
        defer { pthread_rwlock_unlock(&resizeLock) }
        guard generation.value != openedGeneration else { return }
        try generation.withLock(LOCK_SH) {
            let size = mapSize
            mdb_env_close(env)
            env = try Environment.open(path: path, maxDatabases: maxDatabases, mapSize: size)
            openedGeneration = generation.value
            databasesLock.lock()
            defer { databasesLock.unlock() }
            var txn: OpaquePointer?
            try LMDBError.check(mdb_txn_begin(env, nil, 0, &txn), "txn_begin(reopen)")
            do {
                for (name, db) in databases.sorted(by: { $0.value.handle < $1.value.handle }) {
                    var dbi: MDB_dbi = 0
                    try LMDBError.check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi), "dbi_open \(name)")
                    guard dbi == db.handle else { throw LMDBError(code: MDB_INCOMPATIBLE, operation: "reopen \(name)") }
                }
                try LMDBError.check(mdb_txn_commit(txn), "txn_commit(reopen)")
            } catch {
                mdb_txn_abort(txn)
                throw error
            }
        }
    }

    /// Rewrites the store into a new, compacted file and puts it in place of the old one,
    /// so that nothing deleted survives in free pages (LMDB is copy-on-write: freed pages
    /// keep their old bytes until reused).
    ///
    /// `mdb_env_copy2(MDB_CP_COMPACT)` writes only the live part of every page. While it
    /// runs, this environment holds the write lock (no process can commit) and the
    /// store's lock file exclusively (no process can open the store). The generation in
    /// `compaction.lock` is bumped before the swap: every environment, in any process,
    /// compares it after beginning a transaction and reopens when it moved, so nobody
    /// writes to the replaced file. Readers already in a transaction finish on the old,
    /// unlinked file; `lock.mdb` is removed with it (the copy restarts transaction ids).
    public func compact() throws {
        while true {
            pthread_rwlock_rdlock(&resizeLock)
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, nil, 0, &txn)
            guard rc == 0 else {
                pthread_rwlock_unlock(&resizeLock)
                throw LMDBError(code: rc, operation: "txn_begin(compact)")
            }
            if generation.value != openedGeneration {
                mdb_txn_abort(txn)
                pthread_rwlock_unlock(&resizeLock)
                try reopen()
                continue
            }
            do {
                try generation.withLock(LOCK_EX) { try swapInCompactCopy() }
                mdb_txn_abort(txn)
                pthread_rwlock_unlock(&resizeLock)
            } catch {
                mdb_txn_abort(txn)
                pthread_rwlock_unlock(&resizeLock)
                throw error
            }
            try reopen()
            return
        }
    }

    private func swapInCompactCopy() throws {
        let fm = FileManager.default
        let tmp = path + "/compact.tmp"
        try? fm.removeItem(atPath: tmp)
        try fm.createDirectory(atPath: tmp, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? fm.removeItem(atPath: tmp) }
        // The copy's read transaction runs on another thread: this one holds the write transaction.
        let box = CopyResult()
        let env = UncheckedPointer(self.env)
        let done = DispatchSemaphore(value: 0)
        let t = Thread {
            box.rc = mdb_env_copy2(env.pointer, tmp, UInt32(MDB_CP_COMPACT))
            done.signal()
        }
        t.start()
        done.wait()
        try LMDBError.check(box.rc, "env_copy2(compact)")
        try Environment.fsync(tmp + "/data.mdb")
        try generation.bump()
        unlink(path + "/lock.mdb")
        guard rename(tmp + "/data.mdb", path + "/data.mdb") == 0 else {
            throw LMDBError(code: errno, operation: "rename(compact)")
        }
        try Environment.fsync(path)
    }

    static func fsync(_ file: String) throws {
        let fd = Glibc.open(file, O_RDONLY)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open \(file)") }
        defer { close(fd) }
        guard Glibc.fsync(fd) == 0 else { throw LMDBError(code: errno, operation: "fsync") }
    }

    private func adoptResize() throws {
        pthread_rwlock_wrlock(&resizeLock)
        defer { pthread_rwlock_unlock(&resizeLock) }
        try LMDBError.check(mdb_env_set_mapsize(env, 0), "set_mapsize(adopt)")
    }
}

/// How many transactions of this environment's kind the current thread has open.
enum TransactionDepth {
    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()

    static var value: Int {
        get { Int(bitPattern: pthread_getspecific(key)) }
        set { pthread_setspecific(key, UnsafeRawPointer(bitPattern: newValue)) }
    }
}

private final class CopyResult: @unchecked Sendable { var rc: Int32 = 0 }
private struct UncheckedPointer: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ p: OpaquePointer) { pointer = p }
}

/// `compaction.lock` in the store directory: 8 bytes mapped shared by every process
/// (the compaction generation), and the file that `flock` serialises opening and
/// compacting on (each lock on its own open file description, so threads of one
/// process exclude each other too).
final class StoreGeneration: @unchecked Sendable {
    let file: String
    private let fd: Int32
    private let map: UnsafeMutablePointer<UInt64>

    init(directory: String) throws {
        file = directory + "/compaction.lock"
        fd = Glibc.open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open compaction.lock") }
        var st = stat()
        if fstat(fd, &st) == 0 && st.st_size < 8 { _ = ftruncate(fd, 8) }
        guard let m = mmap(nil, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), m != UnsafeMutableRawPointer(bitPattern: -1) else {
            close(fd)
            throw LMDBError(code: errno, operation: "mmap compaction.lock")
        }
        map = m.assumingMemoryBound(to: UInt64.self)
    }

    deinit {
        munmap(map, 8)
        close(fd)
    }

    /// The current generation (an aligned 8-byte load: one instruction on 64-bit machines).
    var value: UInt64 { map.pointee }

    func bump() throws {
        map.pointee &+= 1
        guard msync(map, 8, MS_SYNC) == 0 else { throw LMDBError(code: errno, operation: "msync compaction.lock") }
    }

    func withLock<T>(_ operation: Int32, _ body: () throws -> T) throws -> T {
        let lfd = Glibc.open(file, O_RDWR | O_CLOEXEC)
        guard lfd >= 0 else { throw LMDBError(code: errno, operation: "open compaction.lock") }
        defer { close(lfd) }
        while flock(lfd, operation) != 0 {
            guard errno == EINTR else { throw LMDBError(code: errno, operation: "flock compaction.lock") }
        }
        return try body()
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
