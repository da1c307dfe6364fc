import AuthLedger
import NIOCore
import PostgresNIO

/// Rows loaded before a body runs, and the reads they answer. A query's view of one
/// REPEATABLE READ snapshot (`PostgresStorage.readAsync`): the rows its load named
/// (`ReadLoad`) — one round trip per step, the statements of `statements` sent
/// together and their answers awaited; the body then runs once over them. A write group's
/// cache (`PostgresAccess.cache`, under its layers of writes) is one too: what its load step
/// read (`PostgresAccess+Load.swift`). A read of something not loaded is a `storage_error`
/// (a query or a group that forgot to name it), never a wait or a run again.
final class PostgresLoaded: StorageReader {
    /// A write group's count of misses (`PostgresStorage.unloadedReads`); nil: a query's.
    let misses: PostgresCounter?
    init(misses: PostgresCounter? = nil) { self.misses = misses }

    var loadedHead: Head = .empty
    /// The log by seq (what the log and stream loads brought), and the events' personal values.
    var log = PostgresFetched<[UInt8]>()
    var personal: [UInt64: [UInt8]?] = [:]
    /// Stream indexes by version.
    var streams: [String: PostgresFetched<UInt64>] = [:]
    /// Stream entries after a seq (`ReadLoad.streamsAfter`): `(version, seq)`, and whether they reach the stream's end.
    var streamsAfter: [String: (after: UInt64, rows: [(UInt64, UInt64)], complete: Bool)] = [:]
    var tree = PostgresFetched<[UInt8]>()
    var states: [String: [UInt8]?] = [:]
    var meta: [String: [UInt8]?] = [:]
    var records: [PostgresPendingWrites.RecordKey: [UInt8]?] = [:]
    var statesFrom: (key: String, rows: [(String, [UInt8])], complete: Bool)?
    var allStates: [(String, [UInt8])]?
    var treeSize: UInt64?
    /// The meta key prefixes loaded in full (`ReadLoad.metaPrefixes`), whether every record
    /// was (`ReadLoad.allRecords`), and the counts (`ReadLoad.counts`).
    var metaPrefixes: [String] = []
    var allRecords = false
    var eventCount: Int?
    var recordCounts: [Int16: Int]?
    /// A write group's: the event ids it looks up (nil: not stored), and the stored personal
    /// values of the users it erases, in seq order (their challenge and OTP records are all in `records`).
    var ids: [EventID: UInt64?] = [:]
    var personalOf: [String: [(seq: UInt64, bytes: [UInt8])]] = [:]
    /// A write group's: whether `tree` holds the locked head's frontier (loaded, or kept from
    /// this process's last commit: `PostgresStorage+CatchUp.swift`).
    var frontier = false

    func notLoaded(_ what: String) -> LedgerError {
        guard let misses else { return LedgerError(.storageError, "a PostgreSQL read asked for \(what), which its query did not load") }
        misses.add(1)
        return LedgerError(.storageError, "internal error: a write group read what its load step did not name (\(what))")
    }

    /// `value` when it was loaded, else a read of `what` refused (`notLoaded`).
    func loaded<V>(_ value: V?, _ what: @autoclosure () -> String) throws -> V {
        guard let value else { throw notLoaded(what()) }
        return value
    }

    // MARK: StorageReader

    func head() throws -> Head { loadedHead }

    func withEventBytes<T>(_ seq: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        guard let bytes = try loaded(log.lookup(seq), "event \(seq)") else { return try body(nil) }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    func seq(forId id: EventID) throws -> UInt64? { try loaded(ids[id], "an event id") }

    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        if try log.scan(from: from, { seq, bytes in try bytes.withUnsafeBytes { try body(seq, $0) } }) != nil {
            throw notLoaded("the log from \(from)")
        }
    }

    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try scanStream(stream, fromVersion: 0, body)
    }

    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        if try streams[stream, default: PostgresFetched()].scan(from: version, body) != nil {
            throw notLoaded("the stream \(stream)")
        }
    }

    func scanStream(_ stream: String, afterSeq after: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        guard let loaded = streamsAfter[stream], loaded.after == after else {
            // A whole stream loaded answers too.
            guard streams[stream] != nil else { throw notLoaded("the stream \(stream)") }
            return try scanStream(stream, fromVersion: firstVersion(stream, afterSeq: after), body)
        }
        for (version, seq) in loaded.rows where try !body(version, seq) { return }
        if !loaded.complete { throw notLoaded("more of the stream \(stream)") }
    }

    func seq(stream: String, version: UInt64) throws -> UInt64? {
        try loaded(streams[stream]?.lookup(version), "version \(version) of the stream \(stream)")
    }

    func projectionState(_ key: String) throws -> [UInt8]? { try loaded(states[key], "the projection \(key)") }

    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        for (key, bytes) in try loaded(allStates, "every projection") where try !bytes.withUnsafeBytes({ try body(key, $0) }) { return }
    }

    func scanProjectionStates(from: String, _ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        let page = try loaded(statesFrom.flatMap { $0.key == from ? $0 : nil }, "the projections from \(from)")
        for (key, bytes) in page.rows where try !bytes.withUnsafeBytes({ try body(key, $0) }) { return }
        if !page.complete { throw notLoaded("more projections from \(from)") }
    }

    func checkpoint() throws -> UInt64 { PostgresRows.checkpoint(try metaValue("checkpoint")) }

    func metaValue(_ key: String) throws -> [UInt8]? {
        guard let value = meta[key] else {
            if metaPrefixes.contains(where: key.hasPrefix) { return nil }
            throw notLoaded("the meta value \(key)")
        }
        return value
    }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) {
        // The id and stream indexes are unique indexes of the events table: one entry per row.
        let n = try loaded(eventCount, "the index counts")
        return (n, n, n)
    }

    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        guard let bytes = personal[seq] else {
            // An erased user's, loaded with the group (every stored value of the user's).
            guard let stored = personalOf[user] else { throw notLoaded("the personal values of event \(seq)") }
            return stored.first { $0.seq == seq }?.bytes
        }
        return bytes
    }

    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        throw notLoaded("the personal values of \(user)")
    }

    func record(_ kind: RecordKind, user: String, id: String) throws -> [UInt8]? {
        guard let bytes = records[.init(kind, user: user, id: id)] else {
            if allRecords || (personalOf[kind.owner(user)] != nil && (kind == .challenge || kind == .otp)) { return nil }
            throw notLoaded("a \(kind) record")
        }
        return bytes
    }

    func recordCount(_ kind: RecordKind) throws -> Int { try loaded(recordCounts, "the record counts")[Int16(kind.rawValue), default: 0] }

    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        guard let hash = try loaded(tree.lookup(index), "tree hash \(index)") else { return try body(nil) }
        return try hash.withUnsafeBytes { try body($0) }
    }

    func treeHashCount() throws -> UInt64 { try loaded(treeSize, "the tree's size") }

    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        if try tree.scan(from: from, { index, hash in try hash.withUnsafeBytes { try body(index, $0) } }) != nil {
            throw notLoaded("the tree from \(from)")
        }
    }
}

extension PostgresLoaded {
    /// The statements loading `wanted` and how each one's rows are kept: one a kind, however
    /// many keys (a keyed read answers `(n, bytes)` of the keys stored, `n` a key's place from
    /// 1: `PostgresRows.keyed`). Events come with their personal values (NULL: none).
    func statements(_ wanted: ReadLoad, _ t: PostgresTables) -> [PostgresRead] {
        var out: [PostgresRead] = []
        func keyed<K>(_ keys: [K], _ sql: @autoclosure () -> String, doing: String, bind: (inout PostgresBindings) -> Void,
                      _ keep: @escaping (K, [UInt8]?) -> Void) {
            guard !keys.isEmpty else { return }
            out.append((PostgresStatement(sql(), doing: doing, bind), { rows in
                for (key, value) in zip(keys, try PostgresRows.keyed(rows, count: keys.count, doing: doing)) { keep(key, value) }
            }))
        }
        let stateKeys = Set(wanted.states).filter { states[$0] == nil }.sorted()
        keyed(stateKeys, """
            SELECT k.n, s.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(key, n) JOIN \(t.states) s ON s.key = k.key
            """, doing: "read projections", bind: { $0.append(stateKeys.map(PostgresAccess.text)) }) { [unowned self] in states[$0] = .some($1) }
        let metaKeys = Set(wanted.meta).filter { meta[$0] == nil }.sorted()
        keyed(metaKeys, """
            SELECT k.n, m.value FROM unnest($1::bytea[]) WITH ORDINALITY AS k(key, n) JOIN \(t.meta) m ON m.key = k.key
            """, doing: "read meta values", bind: { $0.append(metaKeys.map(PostgresAccess.text)) }) { [unowned self] in meta[$0] = .some($1) }
        let recordKeys = Array(Set(wanted.records.map { PostgresPendingWrites.RecordKey($0.kind, user: $0.user, id: $0.id) })).filter { records[$0] == nil }
        keyed(recordKeys, """
            SELECT k.n, r.bytes FROM unnest($1::int2[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS k(kind, owner, id, n)
            JOIN \(t.records) r ON r.kind = k.kind AND r.owner = k.owner AND r.id = k.id
            """, doing: "read records", bind: {
                $0.append(recordKeys.map(\.kind))
                $0.append(recordKeys.map { PostgresAccess.text($0.owner) })
                $0.append(recordKeys.map { PostgresAccess.text($0.id) })
            }) { [unowned self] in records[$0] = .some($1) }
        if wanted.treeSize && treeSize == nil {
            let st = PostgresStatement("SELECT coalesce(sum(length(hashes) / 32), 0)::int8 FROM \(t.tiles)", doing: "count the tree hashes")
            out.append((st, { [unowned self] in treeSize = UInt64(try PostgresRows.integer($0, doing: st.doing) ?? 0) }))
        }
        // A stream's entries `(version, seq, bytes, personal bytes)`: a whole stream, or those after a seq (a page of a history or a feed).
        let streamEvents = """
            SELECT e.version, e.seq, e.bytes, p.bytes FROM \(t.events) e LEFT JOIN \(t.personal) p ON p.seq = e.seq
            WHERE e.stream = $1
            """
        for stream in Set(wanted.streams) where streams[stream]?.lookup(0) == nil {
            let st = PostgresStatement(streamEvents + " AND e.version >= 0 ORDER BY e.version", doing: "scan a stream") {
                $0.append(PostgresAccess.text(stream))
            }
            out.append((st, { [unowned self] rows in
                streams[stream] = PostgresFetched()
                try keepStream(stream, rows, from: 0, limit: .max)
            }))
        }
        for (stream, after, limit) in wanted.streamsAfter {
            let st = PostgresStatement(streamEvents + " AND e.seq > $2 ORDER BY e.version LIMIT \(limit)", doing: "scan a stream") {
                $0.append(PostgresAccess.text(stream)); $0.append(Self.key(after))
            }
            out.append((st, { [unowned self] rows in
                let entries = try keepStream(stream, rows, from: nil, limit: limit)
                streamsAfter[stream] = (after, entries, rows.count < limit)
            }))
        }
        for (from, limit) in wanted.log where limit > 0 {
            let st = PostgresStatement("""
                SELECT e.seq, e.bytes, p.bytes FROM \(t.events) e LEFT JOIN \(t.personal) p ON p.seq = e.seq
                WHERE e.seq >= $1 ORDER BY e.seq LIMIT \(limit)
                """, doing: "scan the log") { $0.append(Self.key(from)) }
            out.append((st, { [unowned self] rows in
                var page: [(UInt64, [UInt8])] = []
                for (seq, bytes, values) in try PostgresRows.decode(rows, (Int64, ByteBuffer, ByteBuffer?).self, doing: st.doing) {
                    page.append((UInt64(bitPattern: seq), Array(bytes.readableBytesView)))
                    personal[UInt64(bitPattern: seq)] = .some(values.map { Array($0.readableBytesView) })
                }
                log.addPage(page, from: from, limit: limit)
            }))
        }
        let tiles = Set(wanted.tree.filter { !$0.isEmpty }.flatMap { range in
            (range.lowerBound / PostgresTiles.width)...((range.upperBound - 1) / PostgresTiles.width)
        })
        if !tiles.isEmpty {
            let st = PostgresStatement("SELECT tile, hashes FROM \(t.tiles) WHERE tile = ANY($1)", doing: "read the tree") {
                $0.append(tiles.sorted().map(Self.key))
            }
            out.append((st, { [unowned self] rows in
                for (tile, hashes) in try PostgresRows.decode(rows, (Int64, ByteBuffer).self, doing: st.doing) {
                    guard hashes.readableBytes % 32 == 0, hashes.readableBytes <= 32 * Int(PostgresTiles.width) else {
                        throw LedgerError(.tampered, "malformed tree hash")
                    }
                    let first = UInt64(bitPattern: tile) &* PostgresTiles.width
                    let all = Array(hashes.readableBytesView)
                    for k in 0..<(all.count / 32) { tree.rows[first + UInt64(k)] = Array(all[(32 * k)..<(32 * k + 32)]) }
                }
                // Every hash of the tiles asked for is known: stored (above) or absent.
                for tile in tiles { tree.covered.append((tile * PostgresTiles.width)...(tile * PostgresTiles.width + PostgresTiles.width - 1)) }
            }))
        }
        if let (from, limit) = wanted.statesFrom {
            // Each state with its stream's latest index entry (NULLs for none): the primary key's
            // range, then one probe of `(stream, version)` per row.
            let st = PostgresStatement("""
                SELECT s.key, s.bytes, e.version, e.seq FROM \(t.states) s LEFT JOIN LATERAL
                (SELECT version, seq FROM \(t.events) WHERE stream = s.key ORDER BY version DESC LIMIT 1) e ON true
                WHERE s.key >= $1 ORDER BY s.key LIMIT \(limit)
                """, doing: "scan the projections from a key") { $0.append(PostgresAccess.text(from)) }
            out.append((st, { [unowned self] rows in
                var got: [(String, [UInt8])] = []
                for (key, bytes, version, seq) in try PostgresRows.decode(rows, (ByteBuffer, ByteBuffer, Int64?, Int64?).self, doing: st.doing) {
                    let name = String(decoding: key.readableBytesView, as: UTF8.self)
                    got.append((name, Array(bytes.readableBytesView)))
                    // Each row's latest stream entry answers `seq(stream:version:)` for it.
                    if let version, let seq {
                        let v = UInt64(bitPattern: version)
                        streams[name, default: PostgresFetched()].add([(v, UInt64(bitPattern: seq))], from: v, through: v)
                    }
                }
                statesFrom = (from, got, rows.count < limit)
            }))
        }
        for prefix in Set(wanted.metaPrefixes) where !metaPrefixes.contains(prefix) {
            // (The prefix's last byte is below 0xff.)
            var upper = Array(prefix.utf8)
            upper[upper.count - 1] += 1
            let st = PostgresStatement("SELECT key, value FROM \(t.meta) WHERE key >= $1 AND key < $2", doing: "read meta values") {
                $0.append(PostgresAccess.text(prefix)); $0.append(PostgresAccess.bytes(upper))
            }
            out.append((st, { [unowned self] rows in
                for (key, value) in try PostgresRows.decode(rows, (ByteBuffer, ByteBuffer).self, doing: st.doing) {
                    meta[String(decoding: key.readableBytesView, as: UTF8.self)] = .some(Array(value.readableBytesView))
                }
                metaPrefixes.append(prefix)
            }))
        }
        if wanted.allRecords && !allRecords {
            let st = PostgresStatement("SELECT kind, owner, id, bytes FROM \(t.records)", doing: "read the records")
            out.append((st, { [unowned self] rows in
                for (kind, owner, id, bytes) in try PostgresRows.decode(rows, (Int16, ByteBuffer, ByteBuffer, ByteBuffer).self, doing: st.doing) {
                    let key = PostgresPendingWrites.RecordKey(kind: kind, owner: String(decoding: owner.readableBytesView, as: UTF8.self),
                                                              id: String(decoding: id.readableBytesView, as: UTF8.self))
                    records[key] = .some(Array(bytes.readableBytesView))
                }
                allRecords = true
            }))
        }
        if wanted.counts && eventCount == nil {
            let events = PostgresStatement("SELECT count(*) FROM \(t.events)", doing: "count the events")
            let kinds = PostgresStatement("SELECT kind, count(*) FROM \(t.records) GROUP BY kind", doing: "count records")
            out.append((events, { [unowned self] in eventCount = Int(try PostgresRows.integer($0, doing: events.doing) ?? 0) }))
            out.append((kinds, { [unowned self] rows in
                recordCounts = try Dictionary(PostgresRows.decode(rows, (Int16, Int64).self, doing: kinds.doing).map { ($0, Int($1)) },
                                              uniquingKeysWith: +)
            }))
        }
        if wanted.allStates && allStates == nil {
            let st = PostgresStatement("SELECT key, bytes FROM \(t.states) ORDER BY key", doing: "scan the projections")
            out.append((st, { [unowned self] rows in
                allStates = try PostgresRows.decode(rows, (ByteBuffer, ByteBuffer).self, doing: st.doing).map { key, bytes in
                    (String(decoding: key.readableBytesView, as: UTF8.self), Array(bytes.readableBytesView))
                }
            }))
        }
        return out
    }

    /// Keeps the rows of a stream's events (`(version, seq, bytes, personal bytes or NULL)`):
    /// the events and, from `from` on, the stream's index; returns its `(version, seq)`.
    @discardableResult
    private func keepStream(_ stream: String, _ rows: [PostgresRow], from: UInt64?, limit: Int) throws -> [(UInt64, UInt64)] {
        var page: [(UInt64, UInt64)] = []
        for (version, seq, bytes, values) in try PostgresRows.decode(rows, (Int64, Int64, ByteBuffer, ByteBuffer?).self, doing: "scan a stream") {
            let at = UInt64(bitPattern: seq)
            page.append((UInt64(bitPattern: version), at))
            log.rows[at] = Array(bytes.readableBytesView)
            personal[at] = .some(values.map { Array($0.readableBytesView) })
        }
        if let from { streams[stream, default: PostgresFetched()].addPage(page, from: from, limit: limit) }
        return page
    }

    /// A key as the statements bind it (keys beyond `Int64.max` find nothing).
    static func key(_ k: UInt64) -> Int64 { Int64(bitPattern: min(k, UInt64(Int64.max))) }
}

/// Rows of one keyed range (the log by seq, a stream by version, the tree by index)
/// loaded, and the key ranges known in full (every row of the snapshot in them was loaded).
struct PostgresFetched<V> {
    var rows: [UInt64: V] = [:]
    var covered: [ClosedRange<UInt64>] = []

    /// The value at `key`: `.some(nil)` when it is known to be absent, nil when not known.
    func lookup(_ key: UInt64) -> V?? {
        if let v = rows[key] { return .some(v) }
        return covered.contains { $0.contains(key) } ? .some(nil) : nil
    }

    /// Adds the rows loaded from `from` on: every row of `from…through` is among them.
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
            guard let range = covered.filter({ $0.contains(key) }).max(by: { $0.upperBound < $1.upperBound }) else { return key }
            for k in rows.keys.filter({ $0 >= key && $0 <= range.upperBound }).sorted() where try !body(k, rows[k]!) {
                return nil
            }
            if range.upperBound == .max { return nil }
            key = range.upperBound + 1
        }
    }
}

extension PostgresStorage {
    /// A query's read (see `StorageBackend.readAsync`): BEGIN goes with the head, the
    /// checkpoint and what `load` names (one round trip), then what `then` names over that
    /// (one more), and `body` runs once over what was loaded (`readSnapshot`).
    package func readAsync<T: Sendable>(_ load: () -> ReadLoad, then: (any StorageReader) throws -> ReadLoad,
                                        _ body: (any StorageReader) throws -> T) async throws -> T {
        queryReads.add(1)
        return try await readSnapshot { s, begun in
            let loaded = PostgresLoaded()
            try await loaded.loadFirst(s, tables, load(), begun: begun)
            queryLoads.add(1)
            let next = loaded.statements(try then(loaded), tables)
            if !next.isEmpty {
                try await s.load(next)
                queryLoads.add(1)
            }
            // (The body's failure is its own: the snapshot still ends with COMMIT.)
            return Result { try body(loaded) }
        }.get()
    }

    /// One REPEATABLE READ READ ONLY transaction on a pooled connection (a query's, a
    /// replay's scan, `verify`'s): `body` gets its BEGIN, sent and not awaited (its first
    /// statements go with it). COMMIT (ROLLBACK when `body` throws) is awaited, and a
    /// connection whose end failed is closed. A failure is the ledger's `storage_error`,
    /// never with the URL or the password.
    func readSnapshot<T: Sendable>(_ body: (PostgresSession, EventLoopFuture<PostgresQueryResult>) async throws -> T) async throws -> T {
        try await connections.withSession { s in
            let result: T
            do { result = try await body(s, s.send("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PostgresBindings())) } catch {
                await s.end("ROLLBACK")
                throw error
            }
            await s.end("COMMIT")
            return result
        }
    }
}

extension PostgresLoaded {
    /// A snapshot's first step, sent with its BEGIN (`begun`): the head, the checkpoint and `wanted`.
    func loadFirst(_ s: PostgresSession, _ t: PostgresTables, _ wanted: ReadLoad, begun: EventLoopFuture<PostgresQueryResult>) async throws {
        var wanted = wanted
        wanted.meta.append("checkpoint")
        let head = PostgresStatement("SELECT seq, hash FROM \(t.head)", doing: "read the head")
        let keepHead: PostgresRead = (head, { [unowned self] rows in loadedHead = try rows.first.map(PostgresRows.head) ?? .empty })
        try await s.load([keepHead] + statements(wanted, t), begun: begun)
    }
}
