import AuthLedgerCore
import CLMDB
import Crypto
import Foundation
import LMDB

final class LMDBAccess: StorageWriter {
    let s: LMDBStorage
    var txn: Transaction
    /// After `clearProjectionStates`: the state keys the transaction has not put again, gone
    /// for its reads at once and deleted when it ends (`finish`).
    private var clearedStates: Set<[UInt8]>?
    /// States put by this transaction, and the map's regions once a replay's many puts let
    /// go of its pages (`putProjectionState`).
    private var statesPut = 0
    private var mapRegions: [Range<UInt>]?
    /// A read transaction's cursor over the tree's hashes, kept from one `withTreeHash` to
    /// the next: a replay's partition looks up its events' leaves in ascending order, most
    /// of them on the page of the one before. Closed by `LMDBStorage.read` when the
    /// transaction's body returns.
    var treeCursor: Cursor?

    init(storage: LMDBStorage, txn: Transaction) {
        self.s = storage
        self.txn = txn
    }

    static func streamKey(_ stream: String, _ version: UInt64) -> [UInt8] {
        storedKey(stream) + [0] + version.bigEndianBytes
    }

    /// The key of a stream's maintained projection state: its index entry at version
    /// 2⁶⁴−1 (versions are at most 2⁶³−1), the last of the stream's entries, so that the
    /// state and the stream's newest entries share a leaf page of `streams`
    /// (`LMDBStorage.layout`).
    static func stateKey(_ stream: String) -> [UInt8] { stateKey(storedKey: storedKey(stream)) }

    /// The version a state is stored at (`stateKey`).
    static let stateVersion = UInt64.max

    /// The state key of a stored stream key: the key ‖ 0x00 ‖ eight 0xFF bytes.
    static func stateKey(storedKey k: some Collection<UInt8>) -> [UInt8] {
        Array(k) + [0] + stateVersion.bigEndianBytes
    }

    /// The stored stream key of a state key (`stateKey`; `version` 0 for layout 2's): nil
    /// for an index entry.
    static func storedKey(ofStateKey k: UnsafeRawBufferPointer, version: UInt64 = stateVersion) -> UnsafeRawBufferPointer? {
        guard k.count >= 9, k[k.count - 9] == 0, k.loadBigEndianUInt64(at: k.count - 8) == version else { return nil }
        return UnsafeRawBufferPointer(rebasing: k[..<(k.count - 9)])
    }

    /// The key bytes of a stream in `streams` and `states`. LMDB keys are at most 511
    /// bytes, but a user key may be 128 characters (up to 512 UTF-8 bytes) and the
    /// streams index appends 9 bytes: a key longer than 502 bytes is stored as its first
    /// 400 bytes ‖ 0x01 ‖ SHA-256 of the whole key (0x01 never occurs in a user key, so
    /// the two forms cannot meet). Shorter keys are stored as they are, as before.
    static func storedKey(_ stream: String) -> [UInt8] {
        let b = Array(stream.utf8)
        if b.count <= 502 { return b }
        return Array(b.prefix(400)) + [1] + Array(SHA256.hash(data: b))
    }

    /// The stream key of a `states` key: itself, or for a digested key the `user` of the
    /// stream's first event.
    func streamName(ofStoredKey k: UnsafeRawBufferPointer) throws -> String {
        guard k.contains(1) else { return String(decoding: k, as: UTF8.self) }
        let first = Array(k) + [0] + UInt64(1).bigEndianBytes
        guard let seq = try first.withUnsafeBytes({ try txn.get(s.streams, $0).map { $0.loadBigEndianUInt64() } }) else {
            throw LedgerError(.tampered, "a projection state has no stream")
        }
        return try withEventBytes(seq) { b in
            guard let b, let user = try EventCodec.decode(b, seq: seq).event.user else {
                throw LedgerError(.tampered, "stream index points at a missing event", seq: seq)
            }
            return user
        }
    }

    /// The key of a user's record: user ‖ 0x00 ‖ id (neither has control characters, so
    /// the split is unique), or when that is longer than LMDB's 511-byte limit, 0x01 ‖
    /// SHA-256 of it (0x01 never starts a user key).
    static func recordKey(_ user: String, _ id: String) -> [UInt8] {
        let k = Array(user.utf8) + [0] + Array(id.utf8)
        if k.count <= 511 { return k }
        return [1] + Array(SHA256.hash(data: k))
    }

    func record(_ kind: RecordKind, user: String, id: String) throws -> [UInt8]? {
        try txn.get(s.records[kind]!, LMDBAccess.recordKey(kind.owner(user), id))
    }

    func recordCount(_ kind: RecordKind) throws -> Int { try txn.count(s.records[kind]!) }

    func putRecord(_ kind: RecordKind, user: String, id: String, _ bytes: [UInt8]) throws {
        try txn.put(s.records[kind]!, LMDBAccess.recordKey(kind.owner(user), id), bytes)
    }

    func clearRecords() throws {
        for kind in RecordKind.allCases { try txn.clear(s.records[kind]!) }
    }

    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        let prefix = LMDBAccess.storedKey(stream) + [0]
        let c = try txn.cursor(s.streams)
        var entry = try c.seek(prefix + max(version, 1).bigEndianBytes)
        while let (k, v) = entry, k.count == prefix.count + 8, k.starts(with: prefix) {
            let version = k.loadBigEndianUInt64(at: prefix.count)
            // The last entry is the stream's projection state, not an index entry.
            if version == LMDBAccess.stateVersion { return }
            if try !body(version, v.loadBigEndianUInt64()) { return }
            entry = try c.next()
        }
    }

    func head() throws -> Head {
        guard let v = try txn.get(s.meta, Array("head".utf8)), v.count == 40 else { return .empty }
        let seq = v[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Head(seq: seq, hash: Hash32(bytes: Array(v[8..<40])))
    }

    func withEventBytes<T>(_ seq: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        try seq.bigEndianBytes.withUnsafeBytes { k in try body(try txn.get(s.events, k)) }
    }

    func seq(forId id: EventID) throws -> UInt64? {
        try id.bytes.withUnsafeBytes { k in try txn.get(s.ids, k).map { $0.loadBigEndianUInt64() } }
    }

    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try scanNumbered(s.events, from: from, keyName: "event key", body)
    }

    /// Visits the entries of a database keyed by 8-byte big-endian numbers (`events`, `tree`)
    /// from `from` on, in key order, until `body` returns false; the map's pages the walk
    /// passed are let go behind it. A key of another length is `tampered` (`keyName` says whose).
    func scanNumbered(_ db: Database, from: UInt64, keyName: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        let c = try txn.cursor(db)
        var entry = try c.seek(from.bigEndianBytes)
        var behind = MapPagesBehind(s.environment)
        while let (k, v) = entry {
            guard k.count == 8 else { throw LedgerError(.tampered, "malformed \(keyName)") }
            if try !body(k.loadBigEndianUInt64(), v) { return }
            behind.passed(v)
            entry = try c.next()
        }
    }

    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try scanStream(stream, fromVersion: 0, body)
    }

    func seq(stream: String, version: UInt64) throws -> UInt64? {
        try LMDBAccess.streamKey(stream, version).withUnsafeBytes { k in try txn.get(s.streams, k).map { $0.loadBigEndianUInt64() } }
    }

    func projectionState(_ key: String) throws -> [UInt8]? {
        let k = LMDBAccess.stateKey(key)
        if clearedStates?.contains(k) == true { return nil }
        return try txn.get(s.streams, k)
    }

    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        try forEachState { k, v in try body(try streamName(ofStoredKey: k), v) }
    }

    func scanProjectionStates(from: String, _ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        try forEachState(from: LMDBAccess.storedKey(from)) { k, v in try body(try streamName(ofStoredKey: k), v) }
    }

    /// Visits `(stored stream key, state)` of every projection state in `streams` until
    /// `body` returns false (none a `clearProjectionStates` of this transaction removed).
    /// A state is its stream's last entry (`stateVersion`): from a stream's first entry the
    /// walk seeks straight to its state key, so it reads a page or two per stream, not every
    /// entry of the index, and lets go of the map's pages behind it.
    /// From `start` (a stored stream key) on, when given: the first stream at or after it.
    func forEachState(from start: [UInt8]? = nil, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool) throws {
        let c = try txn.cursor(s.streams)
        var behind = MapPagesBehind(s.environment)
        // (LMDB refuses an empty key: from the start is from the first.)
        var entry = if let start, !start.isEmpty { try c.seek(start) } else { try c.first() }
        while let (k, v) = entry {
            behind.passed(k)
            if let stream = LMDBAccess.storedKey(ofStateKey: k) {
                if clearedStates?.contains(Array(k)) != true, try !body(stream, v) { return }
                entry = try c.next()
            } else if k.count >= 9, k[k.count - 9] == 0 {
                // An index entry: on to its stream's state (or the next stream, if it has none).
                let state = LMDBAccess.stateKey(storedKey: k[..<(k.count - 9)])
                entry = try c.seek(state)
            } else {
                entry = try c.next()
            }
        }
    }

    func checkpoint() throws -> UInt64 {
        guard let v = try txn.get(s.meta, Array("checkpoint".utf8)), v.count == 8 else { return 0 }
        return v.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    func metaValue(_ key: String) throws -> [UInt8]? { try txn.get(s.meta, Array(key.utf8)) }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) {
        var states = 0
        try forEachState { _, _ in states += 1; return true }
        return (try txn.count(s.events), try txn.count(s.ids), try txn.count(s.streams) - states)
    }

    // The values store is keyed by seq alone (appended in order, like `events`: a batch
    // dirties a few leaf pages, not one per user); a user's records are found through
    // the streams index.
    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        try seq.bigEndianBytes.withUnsafeBytes { k in try txn.get(s.personal, k).map { Array($0) } }
    }

    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        var seqs: [UInt64] = []
        try scanStream(user) { _, seq in seqs.append(seq); return true }
        for seq in seqs {
            let more = try seq.bigEndianBytes.withUnsafeBytes { k in
                try txn.get(s.personal, k).map { try body(seq, $0) } ?? true
            }
            if !more { return }
        }
    }

    func putPersonalValues(user: String, seq: UInt64, _ bytes: [UInt8]) throws {
        var key = seq.bigEndian
        try withUnsafeBytes(of: &key) { k in
            try bytes.withUnsafeBytes { v in try txn.put(s.personal, k, v, flags: UInt32(MDB_APPEND)) }
        }
    }

    func erasePersonalValues(user: String, before: UInt64) throws -> [UInt64] {
        var doomed: [(UInt64, Int)] = []
        try scanPersonalValues(user: user) { seq, v in
            if seq < before { doomed.append((seq, v.count)) }
            return true
        }
        for (seq, size) in doomed {
            let key = seq.bigEndianBytes
            // Zeros first, in place (same size): the page written by this transaction then
            // holds no copy of the value in its free space once the record is deleted.
            try txn.put(s.personal, key, [UInt8](repeating: 0, count: size))
            _ = try txn.delete(s.personal, key)
        }
        return doomed.map(\.0)
    }

    func putEvent(seq: UInt64, id: EventID, stream: String, version: UInt64, bytes: [UInt8]) throws {
        // Keys are built in fixed buffers: no arrays per event.
        var seqKey = seq.bigEndian
        var idKey = (id.high.bigEndian, id.low.bigEndian)
        try withUnsafeBytes(of: &seqKey) { k in
            try bytes.withUnsafeBytes { v in try txn.put(s.events, k, v, flags: UInt32(MDB_APPEND)) }
            try withUnsafeBytes(of: &idKey) { i in try txn.put(s.ids, i, k) }
            if stream.utf8.count > 502 {
                // Rare: a key too long for LMDB is stored in its digested form.
                try LMDBAccess.streamKey(stream, version).withUnsafeBytes { key in try txn.put(s.streams, key, k) }
                return
            }
            var name = stream
            try name.withUTF8 { u in
                try withUnsafeTemporaryAllocation(byteCount: u.count + 9, alignment: 1) { key in
                    key.copyMemory(from: UnsafeRawBufferPointer(u))
                    key[u.count] = 0
                    var v = version.bigEndian
                    withUnsafeBytes(of: &v) { vb in
                        UnsafeMutableRawBufferPointer(rebasing: key[(u.count + 1)...]).copyMemory(from: vb)
                    }
                    try txn.put(s.streams, UnsafeRawBufferPointer(key), k)
                }
            }
        }
    }

    func setHead(_ head: Head) throws {
        try txn.put(s.meta, Array("head".utf8), head.seq.bigEndianBytes + head.hash.bytes)
    }

    func putProjectionState(_ key: String, _ bytes: [UInt8]) throws {
        let k = LMDBAccess.stateKey(key)
        try txn.put(s.streams, k, bytes)
        clearedStates?.remove(k)
        // A replay puts every user's state in one transaction, each on a page of its own
        // across the file: every 256, the map's pages the puts read are let go (they are
        // clean; the transaction's changes are on the heap), or the whole file would be
        // resident by the end. The kernel maps the cached neighbours of each page read
        // (16 pages a fault), so 1,024 puts made the file-backed part climb by ~50 MB
        // between releases, and a process's peak was wherever the saw stood when the heap
        // was at its highest.
        statesPut += 1
        if statesPut % 256 == 0 {
            if mapRegions == nil { mapRegions = s.environment.mappedRegions() }
            Environment.release(mapRegions!)
        }
    }

    /// Every state is gone for this transaction at once, but only the keys it does not put
    /// again are deleted, when it ends (`finish`): a replay, which puts every state again,
    /// then dirties each state's page once, when it writes it, rather than also at its start,
    /// where the copies of every page holding a state stayed on the heap while the
    /// partitions folded.
    func clearProjectionStates() throws {
        var keys = clearedStates ?? []
        try forEachState { stream, _ in keys.insert(LMDBAccess.stateKey(storedKey: stream)); return true }
        clearedStates = keys
    }

    /// Before the transaction commits: deletes the states cleared and not put again.
    func finish() throws {
        guard let keys = clearedStates else { return }
        clearedStates = nil
        for k in keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) { _ = try txn.delete(s.streams, k) }
    }

    func setCheckpoint(_ seq: UInt64) throws {
        try txn.put(s.meta, Array("checkpoint".utf8), seq.bigEndianBytes)
    }

    func putMetaValue(_ key: String, _ bytes: [UInt8]?) throws {
        if let bytes { try txn.put(s.meta, Array(key.utf8), bytes) } else { try txn.delete(s.meta, Array(key.utf8)) }
    }

    func savepoint<T>(_ body: () throws -> T) throws -> T {
        let parent = txn
        let child = try parent.beginChild()
        txn = child
        defer { txn = parent }
        let cleared = clearedStates
        let result: T
        do {
            result = try body()
        } catch {
            child.abort()
            clearedStates = cleared
            throw error
        }
        // A failed commit has freed the child already (LMDB): no abort after it.
        try child.commit()
        return result
    }
}
