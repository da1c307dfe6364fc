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
// @unchecked: the MDB_env pointer is used from any thread (MDB_NOTLS) and replaced only under the resize gate's exclusive hold; the database cache is guarded by `databasesLock`.
public final class Environment: @unchecked Sendable {
    var env: OpaquePointer
    public let path: String
    let gate = ResizeGate()
    // Recursive: `database(_:)` opens in a write transaction, which may reopen the store.
    private let databasesLock = NSRecursiveLock()
    private var databases: [String: Database] = [:]
    private let maxDatabases: Int
    /// The store's compaction generation (`compaction.lock`, shared by every process),
    /// and the one this process's environment was opened at (see `compact()`).
    private let generation: StoreGeneration
    private var openedGeneration: UInt64

    /// Opens (creating if needed) the environment in directory `path`, and clears the
    /// reader slots of processes that died inside a read transaction (`mdb_reader_check`).
    /// `maxMapSize` bounds map growth: a write that needs more fails with `MDB_MAP_FULL`.
    public init(path: String, maxDatabases: Int = 16, initialMapSize: Int = 1 << 30, maxMapSize: Int = 1 << 44) throws {
        self.path = path
        self.maxMapSize = max(maxMapSize, initialMapSize)
        self.maxDatabases = maxDatabases
        let gen = try StoreGeneration(directory: path)
        generation = gen
        // Opened while no compaction swaps the store's file (see `compact()`).
        let (env, dead, at) = try gen.withLock(LOCK_SH) {
            let (env, dead) = try Environment.open(path: path, maxDatabases: maxDatabases, mapSize: initialMapSize)
            return (env, dead, gen.value)
        }
        staleReadersCleared = dead
        openedGeneration = at
        self.env = env
    }

    private static func open(path: String, maxDatabases: Int, mapSize: Int) throws -> (OpaquePointer, Int) {
        var created: OpaquePointer?
        try LMDBError.check(mdb_env_create(&created), "env_create")
        guard let env = created else { throw LMDBError(code: ENOMEM, operation: "env_create") }
        do {
            try LMDBError.check(mdb_env_set_maxdbs(env, MDB_dbi(maxDatabases)), "set_maxdbs")
            try LMDBError.check(mdb_env_set_maxreaders(env, 1024), "set_maxreaders")
            try LMDBError.check(mdb_env_set_mapsize(env, mapSize), "set_mapsize")
            try LMDBError.check(mdb_env_open(env, path, UInt32(MDB_NOTLS), 0o600), "env_open")
            var dead: Int32 = 0
            try LMDBError.check(mdb_reader_check(env, &dead), "reader_check")
            return (env, Int(dead))
        } catch {
            // Closed here, once: the caller never holds it.
            mdb_env_close(env)
            throw error
        }
    }

    deinit {
        mdb_env_close(env)
    }

    /// Reader slots of dead processes cleared when the environment was opened.
    public private(set) var staleReadersCleared: Int

    /// The map never grows beyond this many bytes.
    public let maxMapSize: Int

    /// Clears the reader slots of processes that died inside a read transaction (a slot
    /// left behind pins the pages of its snapshot, so the file only grows). Returns how
    /// many were cleared. Cheap; a server calls it now and then.
    @discardableResult
    public func checkReaders() throws -> Int {
        var dead: Int32 = 0
        try LMDBError.check(mdb_reader_check(env, &dead), "reader_check")
        return Int(dead)
    }

    /// The process ids holding a reader slot with an open read transaction (from `mdb_reader_list`).
    public func readerProcesses() -> [Int32] {
        final class Lines { var text = "" }
        let lines = Lines()
        let ctx = Unmanaged.passUnretained(lines).toOpaque()
        _ = mdb_reader_list(env, { msg, ctx in
            guard let msg, let ctx else { return 0 }
            Unmanaged<Lines>.fromOpaque(ctx).takeUnretainedValue().text += String(cString: msg)
            return 0
        }, ctx)
        // "    pid     thread     txnid" then one line per slot; "-" as txnid is a free slot.
        return lines.text.split(separator: "\n").dropFirst().compactMap { line in
            let f = line.split(separator: " ")
            guard f.count >= 3, f[2] != "-" else { return nil }
            return Int32(f[0])
        }
    }

    /// The current size of the memory map in bytes.
    public var mapSize: Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_mapsize
    }

    /// The id of the last committed write transaction (grows by one per commit).
    public var lastTransactionID: Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_last_txnid
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
            gate.enterShared(writeTransaction: false)
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn)
            if rc == MDB_MAP_RESIZED {
                gate.leaveShared(writeTransaction: false)
                try adoptResize()
                continue
            }
            // The store was compacted into a new file (by any process): reopen. A read
            // nested in another transaction of this thread stays on that one's file
            // (reopening waits for every transaction of the process: a deadlock).
            if rc == 0 && generation.value != openedGeneration && ResizeGate.depth == 1 {
                mdb_txn_abort(txn)
                gate.leaveShared(writeTransaction: false)
                try reopen()
                continue
            }
            defer { gate.leaveShared(writeTransaction: false) }
            try LMDBError.check(rc, "txn_begin(read)")
            let t = Transaction(txn: txn!, readOnly: true)
            defer { mdb_txn_abort(txn) }
            return try body(t)
        }
    }

    /// Runs `body` in a write transaction and commits it durably when it returns.
    /// Throwing from `body` aborts the transaction. `MDB_MAP_FULL` (from the body or
    /// from the commit) grows the map and runs `body` again.
    ///
    /// `mdb_txn_commit` frees the transaction whether it succeeds or not: a failed
    /// commit (`ENOSPC` on a full disk, `MDB_MAP_FULL`) is never followed by an abort.
    ///
    /// With `deferMetaSync` (`MDB_NOMETASYNC` for this transaction only), the commit
    /// syncs the data pages but not the meta page: the commit is durable only after the
    /// next commit's sync (any process') or `sync()`. LMDB keeps the two latest
    /// snapshots' pages intact, so losing that meta page loses this commit, never more.
    public func write<T>(deferMetaSync: Bool = false, _ body: (Transaction) throws -> T) throws -> T {
        while true {
            gate.enterShared(writeTransaction: true)
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, nil, deferMetaSync ? UInt32(MDB_NOMETASYNC) : 0, &txn)
            if rc == MDB_MAP_RESIZED {
                gate.leaveShared(writeTransaction: true)
                try adoptResize()
                continue
            }
            guard rc == 0, let txn else {
                gate.leaveShared(writeTransaction: true)
                throw LMDBError(code: rc, operation: "txn_begin(write)")
            }
            // The store was compacted into a new file: this environment's file is no
            // longer the store's, so reopen before writing anything.
            if generation.value != openedGeneration {
                mdb_txn_abort(txn)
                gate.leaveShared(writeTransaction: true)
                guard ResizeGate.depth == 0 else {
                    throw LMDBError(code: MDB_BAD_TXN, operation: "txn_begin(write): the store was compacted under an open transaction")
                }
                try reopen()
                continue
            }
            let result: T
            do {
                result = try body(Transaction(txn: txn, readOnly: false))
            } catch let error as LMDBError where error.isMapFull {
                mdb_txn_abort(txn)
                gate.leaveShared(writeTransaction: true)
                try grow()
                continue
            } catch {
                mdb_txn_abort(txn)
                gate.leaveShared(writeTransaction: true)
                throw error
            }
            let committed = mdb_txn_commit(txn)
            gate.leaveShared(writeTransaction: true)
            if committed == 0 { return result }
            if committed == MDB_MAP_FULL {
                try grow()
                continue
            }
            throw commitFailure(committed)
        }
    }

    private func grow() throws {
        gate.enterExclusive()
        defer { gate.leaveExclusive() }
        let size = mapSize
        guard size < maxMapSize else {
            throw LMDBError(code: MDB_MAP_FULL, operation: "grow: the map is at its maximum of \(maxMapSize) bytes")
        }
        try LMDBError.check(mdb_env_set_mapsize(env, min(size * 2, maxMapSize)), "set_mapsize(grow)")
    }

    /// Closes and reopens the environment on the store's current file, with the same
    /// database handles, once no transaction of this process is open.
    private func reopen() throws {
        gate.enterExclusive()
        defer { gate.leaveExclusive() }
        guard generation.value != openedGeneration else { return }
        try generation.withLock(LOCK_SH) {
            let size = mapSize
            mdb_env_close(env)
            (env, _) = try Environment.open(path: path, maxDatabases: maxDatabases, mapSize: size)
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
            gate.enterShared(writeTransaction: true)
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(env, nil, 0, &txn)
            guard rc == 0 else {
                gate.leaveShared(writeTransaction: true)
                throw LMDBError(code: rc, operation: "txn_begin(compact)")
            }
            if generation.value != openedGeneration {
                mdb_txn_abort(txn)
                gate.leaveShared(writeTransaction: true)
                try reopen()
                continue
            }
            do {
                try generation.withLock(LOCK_EX) { try swapInCompactCopy() }
                mdb_txn_abort(txn)
                gate.leaveShared(writeTransaction: true)
            } catch {
                mdb_txn_abort(txn)
                gate.leaveShared(writeTransaction: true)
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
        chmod(tmp + "/data.mdb", 0o600)
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
        gate.enterExclusive()
        defer { gate.leaveExclusive() }
        try LMDBError.check(mdb_env_set_mapsize(env, 0), "set_mapsize(adopt)")
    }
}

/// Transactions of this process hold the gate shared; changing the map size holds it
/// exclusively (LMDB: only while no transaction of the process is open).
///
/// Hand-written rather than a `pthread_rwlock`: glibc's default rwlock prefers readers,
/// so overlapping long reads (exports, verify, event streams) could keep a map growth —
/// and with it every append — waiting for good. Here a waiting resize holds back new
/// read transactions, except those a thread opens while it already holds one (nested:
/// waiting would deadlock) and those opened while a write transaction is open (a
/// resize cannot run before that write ends anyway, and the write may be waiting on
/// them, as a rebuild of the projections does).
// @unchecked: its counters are guarded by `condition` (NSCondition: resizing waits on it, which Mutex cannot).
final class ResizeGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var shared = 0, writeTransactions = 0, exclusive = false, waiting = 0

    private static let depthKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Transactions the current thread has open.
    static var depth: Int {
        get { Int(bitPattern: pthread_getspecific(depthKey)) }
        set { pthread_setspecific(depthKey, UnsafeRawPointer(bitPattern: newValue)) }
    }

    func enterShared(writeTransaction: Bool) {
        let nested = Self.depth > 0
        condition.lock()
        while exclusive || (waiting > 0 && !nested && writeTransactions == 0) { condition.wait() }
        shared += 1
        if writeTransaction { writeTransactions += 1 }
        condition.unlock()
        Self.depth += 1
    }

    func leaveShared(writeTransaction: Bool) {
        Self.depth -= 1
        condition.lock()
        shared -= 1
        if writeTransaction { writeTransactions -= 1 }
        if waiting > 0 { condition.broadcast() }
        condition.unlock()
    }

    func enterExclusive() {
        condition.lock()
        waiting += 1
        while exclusive || shared > 0 { condition.wait() }
        waiting -= 1
        exclusive = true
        condition.unlock()
    }

    func leaveExclusive() {
        condition.lock()
        exclusive = false
        condition.broadcast()
        condition.unlock()
    }

    /// Resizes waiting for the gate (tests).
    var waitingResizes: Int { condition.withLock { waiting } }
}

// @unchecked: written by the copying thread before it is joined, read after.
private final class CopyResult: @unchecked Sendable { var rc: Int32 = 0 }
// @unchecked: a C pointer handed to the copying thread, used by it alone.
private struct UncheckedPointer: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ p: OpaquePointer) { pointer = p }
}

/// `compaction.lock` in the store directory: 8 bytes mapped shared by every process
/// (the compaction generation), and the file that `flock` serialises opening and
/// compacting on (each lock on its own open file description, so threads of one
/// process exclude each other too).
// @unchecked: a shared-memory counter (mmap of `compaction.lock`) read and written under flock, which the compiler cannot see.
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

    /// This transaction's id (a write transaction's is the last committed one's + 1).
    public var id: Int { Int(mdb_txn_id(txn)) }
    public let readOnly: Bool

    /// Begins a nested write transaction: its writes become part of this one on
    /// `commit()`, and vanish on `abort()`, leaving this one as it was.
    public func beginChild() throws -> Transaction {
        var child: OpaquePointer?
        try LMDBError.check(mdb_txn_begin(mdb_txn_env(txn), txn, 0, &child), "txn_begin(child)")
        return Transaction(txn: child!, readOnly: false)
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
