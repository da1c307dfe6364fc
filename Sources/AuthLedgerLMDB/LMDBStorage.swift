import AuthLedgerCore
import CLMDB
import Crypto
import Foundation
import LMDB

// @unchecked: LMDB's handles (the environment, MDB_dbi database handles) are set once in init and may be used from any thread (MDB_NOTLS); they are C values the compiler cannot check.
/// The LMDB backend: one environment directory with these named databases.
///
/// - `events`: seq (8 bytes, big-endian) → encoded event
/// - `ids`: event id (16 bytes) → seq
/// - `streams`: stream key ‖ 0x00 ‖ version (big-endian) → seq; at version 2⁶⁴−1, after
///   the stream's newest entry, its maintained projection state (on their leaf page: a
///   commit dirties one leaf page per user, not two)
/// - `states`: empty since layout 2 (`layout`); the states of an older store, moved to
///   `streams` when it is opened
/// - `meta`: `head` (seq ‖ hash), `checkpoint` (seq), and other small values
/// - `tree`: stored Merkle hash index (8 bytes, big-endian) → 32-byte hash (`MerkleTree`)
/// - `challenges`, `otps`, `grants`: user ‖ 0x00 ‖ id → encoded record (`RecordKind`)
/// - `links`: 0x00 ‖ link hash → user and verification id (`RecordKind.link`)
/// - `personal`: seq (8 bytes, big-endian) → the event's personal values and salts
///   (SPEC 1.5), apart from the hashed event bytes so that erasure can destroy them
///
/// Several processes may open one store; LMDB's lock serialises writers, and the head
/// is always read inside the write transaction, never cached.
package final class LMDBStorage: InPlaceStorage, PipelinedCommits, ReaderSlots, Sendable {
    /// The LMDB environment (the store's directory) with its named databases.
    public let environment: Environment
    /// Lets go of the map's pages as the store grows (appends read the pages they extend
    /// through the map, which would otherwise pin the whole file in the resident set).
    let mapPages = MapPagesRelease()
    let events: Database, ids: Database, streams: Database, states: Database, meta: Database
    let tree: Database
    let records: [RecordKind: Database]
    let personal: Database

    /// Opens (creating with mode 0700) the store directory at `path`.
    public init(path: String, maxMapSize: Int) throws {
        // Mistakes of the setup (configuration_error), not failures of a store: a path that
        // is a file, a directory that cannot be made or opened. Messages never name the path.
        var isDir: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDir) {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                // (Foundation's message names the path.)
                throw LedgerError(.configurationError, "cannot create the store directory: check that its parent is a directory this user may write")
            }
        } else if !isDir.boolValue {
            throw LedgerError(.configurationError, "the store path is not a directory")
        }
        do {
            environment = try Environment(path: path, maxDatabases: 32, maxMapSize: maxMapSize)
            events = try environment.database("events")
            ids = try environment.database("ids")
            streams = try environment.database("streams")
            states = try environment.database("states")
            meta = try environment.database("meta")
            tree = try environment.database("tree")
            records = [.challenge: try environment.database("challenges"), .otp: try environment.database("otps"),
                       .grant: try environment.database("grants"), .link: try environment.database("links")]
            personal = try environment.database("personal")
            try upgradeLayout()
        } catch let e as LMDBError {
            // A directory this process may not read or write: the setup's mistake.
            if [EACCES, EPERM, EROFS, ENOTDIR].contains(e.code) {
                throw LedgerError(.configurationError, "cannot open the store directory (\(String(cString: strerror(e.code)))): check its owner and mode")
            }
            // A garbage or foreign `data.mdb`, a store of another LMDB version, a full disk…
            var failure = e.ledgerError
            failure.message = "cannot open the store: " + failure.message
            throw failure
        }
    }

    /// The key layout this release writes (meta `layout`): 3 keeps each projection state in
    /// `streams` after the stream's entries (`LMDBAccess.stateKey`). Layout 2 kept it at
    /// version 0, before them: beside the newest entries only while a stream's entries fit
    /// in one page. A store without the value was written by an earlier release, with the
    /// states in `states`.
    static let layout: UInt8 = 3
    static let layoutKey = Array("layout".utf8)

    /// Brings a store of an earlier layout to `layout` in one write transaction: its
    /// projection states move from `states` (layout 1) or from version 0 of `streams`
    /// (layout 2) to their place (bytes unchanged: no event, hash or answer changes). A
    /// store of a later layout is refused, not misread.
    private func upgradeLayout() throws {
        let found = try environment.read { txn in try txn.get(meta, LMDBStorage.layoutKey) }
        if found == [LMDBStorage.layout] { return }
        if let found, found.count != 1 || found[0] > LMDBStorage.layout {
            throw LedgerError(.configurationError, "the store's layout \(found.map(String.init).joined(separator: ".")) is newer than this release's (\(LMDBStorage.layout)); open it with the release that wrote it")
        }
        try environment.write { txn in
            // Again inside the write transaction: another process may have upgraded meanwhile.
            if try txn.get(meta, LMDBStorage.layoutKey) == [LMDBStorage.layout] { return }
            var moved: [([UInt8], [UInt8])] = []
            var left: [[UInt8]] = []
            let c = try txn.cursor(states)
            var entry = try c.first()
            while let (k, v) = entry {
                moved.append((LMDBAccess.stateKey(storedKey: k), Array(v)))
                entry = try c.next()
            }
            // Layout 2's states: the `streams` entries at version 0 (no event has version 0).
            let s = try txn.cursor(streams)
            entry = try s.first()
            while let (k, v) = entry {
                if let stream = LMDBAccess.storedKey(ofStateKey: k, version: 0) {
                    left.append(Array(k))
                    moved.append((LMDBAccess.stateKey(storedKey: stream), Array(v)))
                }
                entry = try s.next()
            }
            for k in left { _ = try txn.delete(streams, k) }
            for (k, v) in moved { try txn.put(streams, k, v) }
            try txn.clear(states)
            try txn.put(meta, LMDBStorage.layoutKey, [LMDBStorage.layout])
        }
    }

    /// Opens the store with the map bounded to `maxMapSize` bytes (a full map that may
    /// not grow is `storage_full`, as a full disk is).
    public convenience init(path: String) throws {
        try self.init(path: path, maxMapSize: 1 << 44)
    }

    /// Runs `body` in a read transaction: a consistent snapshot of the store.
    public func read<T>(_ body: (any StorageReader) throws -> T) throws -> T {
        do {
            return try environment.read { txn in
                let access = LMDBAccess(storage: self, txn: txn)
                defer { access.treeCursor = nil }
                return try body(access)
            }
        } catch let e as LMDBError {
            throw e.ledgerError
        }
    }

    /// Runs `body` in one durable write transaction (committed and synced when it returns).
    public func write<T>(_ body: (any StorageWriter) throws -> T) throws -> T {
        do {
            defer { mapPages.committed(environment) }
            return try environment.write { txn in try writing(txn, body) }
        } catch let e as LMDBError {
            throw e.ledgerError
        }
    }

    /// `body` on the write transaction `txn`, then what the transaction deferred to its end
    /// (`LMDBAccess.finish`), before the commit.
    private func writing<T>(_ txn: Transaction, _ body: (any StorageWriter) throws -> T) throws -> T {
        let access = LMDBAccess(storage: self, txn: txn)
        let value = try body(access)
        try access.finish()
        return value
    }

    /// Commits with `MDB_NOMETASYNC`: the data pages are synced, the meta page only
    /// written, so the commit is durable once a later commit synced (its data sync
    /// flushes the file, this meta page included) or after `sync()`.
    public func writePipelined<T>(_ body: (any StorageWriter) throws -> T) throws -> (value: T, durable: Bool, synced: Bool) {
        do {
            var id = Int.max
            defer { mapPages.committed(environment) }
            let value = try environment.write(deferMetaSync: true) { txn in
                id = txn.id
                return try writing(txn, body)
            }
            // A transaction that wrote nothing commits (and syncs) nothing: LMDB returns early.
            let committed = environment.lastTransactionID >= id
            return (value, !committed, committed)
        } catch let e as LMDBError {
            throw e.ledgerError
        }
    }

    /// Makes every commit so far durable (after pipelined commits).
    public func sync() throws {
        do { try environment.sync() } catch let e as LMDBError { throw e.ledgerError }
    }

    /// Clears reader slots left by processes that died inside a read transaction.
    package func clearStaleReaders() throws -> Int {
        do { return try environment.checkReaders() } catch let e as LMDBError { throw e.ledgerError }
    }

    /// LMDB keeps deleted bytes in free pages (and in the unused part of live pages):
    /// the store is rewritten compacted and swapped in (`Environment.compact`).
    public func purgeDeleted() throws {
        do { try environment.compact() } catch let e as LMDBError { throw e.ledgerError }
    }
}

extension LMDBStorage: StoreFiguresReporting {
    /// `data.mdb`'s size, the pages in use and the map.
    package func storeFigures() -> StoreFigures? {
        let file = (try? FileManager.default.attributesOfItem(atPath: environment.path + "/data.mdb"))?[.size] as? NSNumber
        return StoreFigures(fileBytes: file?.int64Value ?? 0, usedBytes: Int64(environment.usedSize),
                            mapBytes: Int64(environment.mapSize))
    }
}
