import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
    /// When to let go of the pages LMDB keeps from large write transactions (`WriteCache`).
    let writeCache = WriteCache()

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
        // Closing frees the pages LMDB kept from write transactions (see `WriteCache`): hand
        // them back to the system rather than leave them in the writer thread's arena.
        _ = WriteCache.mallocTrim?(0)
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
        // Every use of `env` outside a transaction holds the gate: the environment may be
        // reopened (after a compaction or a large transaction) by another thread.
        gate.enterShared(writeTransaction: false)
        defer { gate.leaveShared(writeTransaction: false) }
        var dead: Int32 = 0
        try LMDBError.check(mdb_reader_check(env, &dead), "reader_check")
        return Int(dead)
    }

    /// The process ids holding a reader slot with an open read transaction (from `mdb_reader_list`).
    public func readerProcesses() -> [Int32] {
        gate.enterShared(writeTransaction: false)
        defer { gate.leaveShared(writeTransaction: false) }
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
        gate.enterShared(writeTransaction: false)
        defer { gate.leaveShared(writeTransaction: false) }
        return mapSizeHoldingGate
    }

    private var mapSizeHoldingGate: Int {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_mapsize
    }

    /// The id of the last committed write transaction (grows by one per commit).
    public var lastTransactionID: Int {
        gate.enterShared(writeTransaction: false)
        defer { gate.leaveShared(writeTransaction: false) }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info.me_last_txnid
    }

    /// Flushes the data buffers to disk (used after bulk loads that skipped syncs).
    public func sync() throws {
        gate.enterShared(writeTransaction: false)
        defer { gate.leaveShared(writeTransaction: false) }
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
            let tally = WriteTally()
            do {
                result = try body(Transaction(txn: txn, readOnly: false, tally: tally))
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
            if committed == 0 {
                writeCache.committed(tally.bytes, self)
                return result
            }
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
        let size = mapSizeHoldingGate
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
        try reopenHoldingGate()
    }

    /// `reopen()` by a caller holding the gate exclusively, whether the file changed or not.
    func reopenHoldingGate() throws {
        try generation.withLock(LOCK_SH) {
            let size = mapSizeHoldingGate
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
        let rc = copyReleasingPages(to: tmp)
        try LMDBError.check(rc, "env_copy2(compact)")
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

