import AuthLedgerCore
import Foundation
import NIOCore
import PostgresNIO

/// An async read's view of one REPEATABLE READ snapshot (`PostgresStorage.readAsync`):
/// a `StorageReader` that answers from the rows fetched so far. A read it cannot answer
/// records what it needs (`missing`) and throws; the read's body is then run again once
/// that was fetched with async queries (`fill`, `PostgresSnapshot+Fill.swift`). A read's
/// body only reads, so running it again is safe; the rows all come from the one snapshot,
/// so every run sees the same store.
final class PostgresSnapshot: StorageReader {
    /// What a read asked for that was not fetched.
    enum Need: Hashable {
        case head, eventCount, treeCount, allStates
        /// Events from a seq on (with their personal values), a page.
        case log(from: UInt64)
        /// A stream's index and its events from a version on, a page.
        case stream(String, from: UInt64)
        /// Tree hashes from an index on, a page.
        case tree(from: UInt64)
        case treeHash(UInt64), id(EventID), state(String), meta(String), personal(UInt64), personalOf(String)
        case record(PostgresPendingWrites.RecordKey), recordCount(Int16)
        /// The projection states from a key on, a page (with their streams' latest entries).
        case statesFrom(String)
    }

    /// Thrown by a read that needs rows not fetched yet (the body's run is then discarded).
    struct Miss: Error {}

    /// The first thing the current run needed and did not find (nil: it needed nothing more).
    private(set) var missing: Need?
    /// Rows of a range's first fetch; each later fetch of the same range fetches as many
    /// as all before it (pages that double, so the runs cost at most about twice the last).
    let firstPage: Int
    var fetched: [String: Int] = [:]

    var fetchedHead: Head?
    var eventCount: Int?
    var treeCount: UInt64?
    var log = PostgresFetched<[UInt8]>()
    var streams: [String: PostgresFetched<UInt64>] = [:]
    var tree = PostgresFetched<[UInt8]>()
    var personal: [UInt64: [UInt8]?] = [:]
    var ids: [EventID: UInt64?] = [:]
    var states: [String: [UInt8]?] = [:]
    var meta: [String: [UInt8]?] = [:]
    var records: [PostgresPendingWrites.RecordKey: [UInt8]?] = [:]
    var recordCounts: [Int16: Int] = [:]
    var personalOf: [String: [(UInt64, [UInt8])]] = [:]
    var allStates: [(String, [UInt8])]?
    /// The states of `scanProjectionStates(from:_:)` by start key: the rows fetched so far,
    /// and whether they reach the last state.
    var statesFrom: [String: (rows: [(String, [UInt8])], complete: Bool)] = [:]

    init(firstPage: Int) { self.firstPage = max(firstPage, 1) }

    /// Runs `body` against what was fetched; `missing` tells whether it needs more.
    func attempt<T>(_ body: (any StorageReader) throws -> T) -> Result<T, any Error> {
        missing = nil
        return Result { try body(self) }
    }

    /// Records `need` (the first of a run: a body that catches a miss and reads on still
    /// runs again) and returns the error to throw.
    private func miss(_ need: Need) -> Miss {
        if missing == nil { missing = need }
        return Miss()
    }

    /// The rows to fetch for the range `key` now (see `firstPage`).
    func pageSize(_ key: String) -> Int {
        let before = fetched[key, default: 0]
        let n = min(max(firstPage, before), PostgresAccess.scanPage)
        fetched[key] = before + n
        return n
    }

    // MARK: StorageReader

    func head() throws -> Head {
        guard let fetchedHead else { throw miss(.head) }
        return fetchedHead
    }

    func withEventBytes<T>(_ seq: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        guard let bytes = log.lookup(seq) else { throw miss(.log(from: seq)) }
        guard let bytes else { return try body(nil) }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    func seq(forId id: EventID) throws -> UInt64? {
        guard let seq = ids[id] else { throw miss(.id(id)) }
        return seq
    }

    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        if let next = try log.scan(from: from, { seq, bytes in try bytes.withUnsafeBytes { try body(seq, $0) } }) {
            throw miss(.log(from: next))
        }
    }

    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try scanStream(stream, fromVersion: 0, body)
    }

    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        if let next = try streams[stream, default: PostgresFetched()].scan(from: version, body) {
            throw miss(.stream(stream, from: next))
        }
    }

    func seq(stream: String, version: UInt64) throws -> UInt64? {
        guard let seq = streams[stream]?.lookup(version) else { throw miss(.stream(stream, from: version)) }
        return seq
    }

    func projectionState(_ key: String) throws -> [UInt8]? {
        guard let bytes = states[key] else { throw miss(.state(key)) }
        return bytes
    }

    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard let allStates else { throw miss(.allStates) }
        for (key, bytes) in allStates where try !bytes.withUnsafeBytes({ try body(key, $0) }) { return }
    }

    func scanProjectionStates(from: String, _ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        let fetched = statesFrom[from] ?? ([], false)
        for (key, bytes) in fetched.rows where try !bytes.withUnsafeBytes({ try body(key, $0) }) { return }
        if !fetched.complete { throw miss(.statesFrom(from)) }
    }

    func checkpoint() throws -> UInt64 { PostgresRows.checkpoint(try metaValue("checkpoint")) }

    func metaValue(_ key: String) throws -> [UInt8]? {
        guard let value = meta[key] else { throw miss(.meta(key)) }
        return value
    }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) {
        // As `PostgresAccess.indexCounts`: the indexes are unique indexes of the events table.
        guard let n = eventCount else { throw miss(.eventCount) }
        return (n, n, n)
    }

    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        guard let bytes = personal[seq] else { throw miss(.personal(seq)) }
        return bytes
    }

    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        guard let all = personalOf[user] else { throw miss(.personalOf(user)) }
        for (seq, bytes) in all where try !bytes.withUnsafeBytes({ try body(seq, $0) }) { return }
    }

    func record(_ kind: RecordKind, user: String, id: String) throws -> [UInt8]? {
        let key = PostgresPendingWrites.RecordKey(kind: Int16(kind.rawValue), owner: kind.owner(user), id: id)
        guard let bytes = records[key] else { throw miss(.record(key)) }
        return bytes
    }

    func recordCount(_ kind: RecordKind) throws -> Int {
        guard let n = recordCounts[Int16(kind.rawValue)] else { throw miss(.recordCount(Int16(kind.rawValue))) }
        return n
    }

    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        guard let hash = tree.lookup(index) else { throw miss(.treeHash(index)) }
        guard let hash else { return try body(nil) }
        return try hash.withUnsafeBytes { try body($0) }
    }

    func treeHashCount() throws -> UInt64 {
        guard let treeCount else { throw miss(.treeCount) }
        return treeCount
    }

    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        if let next = try tree.scan(from: from, { index, hash in try hash.withUnsafeBytes { try body(index, $0) } }) {
            throw miss(.tree(from: next))
        }
    }
}

/// Rows of one keyed range (the log by seq, a stream by version, the tree by index)
/// fetched so far, and the key ranges known in full (every row of the snapshot in them
/// was fetched).
struct PostgresFetched<V> {
    var rows: [UInt64: V] = [:]
    var covered: [ClosedRange<UInt64>] = []

    /// The value at `key`: `.some(nil)` when it is known to be absent, nil when not known.
    func lookup(_ key: UInt64) -> V?? {
        if let v = rows[key] { return .some(v) }
        return covered.contains { $0.contains(key) } ? .some(nil) : nil
    }

    /// Adds the rows fetched from `from` on: every row of `from…through` is among them.
    mutating func add(_ fetched: [(UInt64, V)], from: UInt64, through: UInt64) {
        for (k, v) in fetched { rows[k] = v }
        if from <= through { covered.append(from...through) }
    }

    /// Adds a page of `limit` rows asked for from `from` on (a short page reaches the end).
    mutating func addPage(_ fetched: [(UInt64, V)], from: UInt64, limit: Int) {
        add(fetched, from: from, through: fetched.count < limit ? .max : fetched.last!.0)
    }

    /// Visits the rows from `from` on in key order until `body` returns false; returns the
    /// first key not known (nil: the rows ran out or `body` stopped).
    func scan(from: UInt64, _ body: (UInt64, V) throws -> Bool) throws -> UInt64? {
        var key = from
        while true {
            guard let range = covered.first(where: { $0.contains(key) }) else { return key }
            for k in rows.keys.filter({ $0 >= key && $0 <= range.upperBound }).sorted() where try !body(k, rows[k]!) {
                return nil
            }
            if range.upperBound == .max { return nil }
            key = range.upperBound + 1
        }
    }
}
