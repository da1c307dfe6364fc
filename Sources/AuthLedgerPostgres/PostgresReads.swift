import AuthLedgerCore
import NIOCore
import PostgresNIO

/// One read statement: its SQL, its binds, and what it does (named in failures).
struct PostgresStatement: Sendable {
    let sql: String
    let binds: PostgresBindings
    let doing: String

    init(_ sql: String, doing: String, _ build: (inout PostgresBindings) -> Void = { _ in }) {
        self.sql = sql
        self.doing = doing
        var b = PostgresBindings()
        build(&b)
        binds = b
    }

    init(_ sql: String, _ binds: PostgresBindings, doing: String) {
        self.sql = sql
        self.binds = binds
        self.doing = doing
    }
}

/// The read statements of the store, each in one place: the write transactions' reader
/// (`PostgresAccess+Reader.swift`) and the queries' loads (`PostgresLoaded.swift`) both
/// send these and decode their rows with `PostgresRows`.
extension PostgresTables {
    var headRow: PostgresStatement { PostgresStatement("SELECT seq, hash FROM \(head)", doing: "read the head") }

    /// Events from `seq` on, with their personal values: `(seq, bytes, personal bytes or NULL)`.
    func logPage(from seq: Int64, limit: Int) -> PostgresStatement {
        PostgresStatement("""
            SELECT e.seq, e.bytes, p.bytes FROM \(events) e LEFT JOIN \(personal) p ON p.seq = e.seq
            WHERE e.seq >= $1 ORDER BY e.seq LIMIT \(limit)
            """, doing: "scan the log") { $0.append(seq) }
    }

    /// `(version, seq, bytes, personal bytes or NULL)` of every entry of `stream`: a stream's
    /// index and its events in one statement.
    func streamEvents(_ stream: String) -> PostgresStatement {
        PostgresStatement("""
            SELECT e.version, e.seq, e.bytes, p.bytes FROM \(events) e LEFT JOIN \(personal) p ON p.seq = e.seq
            WHERE e.stream = $1 AND e.version >= 0 ORDER BY e.version
            """, doing: "scan a stream") { $0.append(PostgresAccess.text(stream)) }
    }

    /// `(version, seq, bytes, personal bytes or NULL)` of `stream`'s entries whose seq is
    /// after `seq`, in version order (a page of a history or of a user's feed).
    func streamEventsAfter(_ stream: String, seq: Int64, limit: Int) -> PostgresStatement {
        PostgresStatement("""
            SELECT e.version, e.seq, e.bytes, p.bytes FROM \(events) e LEFT JOIN \(personal) p ON p.seq = e.seq
            WHERE e.stream = $1 AND e.seq > $2 ORDER BY e.version LIMIT \(limit)
            """, doing: "scan a stream") { $0.append(PostgresAccess.text(stream)); $0.append(seq) }
    }

    /// `(tile, hashes)` of the tiles `list` that are stored.
    func tileRows(_ list: [UInt64]) -> PostgresStatement {
        PostgresStatement("SELECT tile, hashes FROM \(tiles) WHERE tile = ANY($1)", doing: "read the tree") {
            $0.append(list.map { Int64(bitPattern: min($0, UInt64(Int64.max))) })
        }
    }

    /// `(key, bytes)` of every projection state, in key order.
    var allStates: PostgresStatement { PostgresStatement("SELECT key, bytes FROM \(states) ORDER BY key", doing: "scan the projections") }

    /// `(tile, hashes)` of the tiles holding the stored indexes `range`, in order (schema
    /// version 3: a tile holds the hashes of `PostgresTiles.width` consecutive indexes), which
    /// `PostgresRows.forEachTreeHash` cuts: a tile is read once, not once per hash.
    func tiles(covering range: Range<UInt64>) -> PostgresStatement {
        let (lo, hi) = range.isEmpty ? (Int64(1), Int64(0))
            : (Int64(range.lowerBound / PostgresTiles.width), Int64((range.upperBound - 1) / PostgresTiles.width))
        return PostgresStatement("SELECT tile, hashes FROM \(tiles) WHERE tile >= $1 AND tile <= $2 ORDER BY tile",
                                 doing: "scan the tree") { $0.append(lo); $0.append(hi) }
    }

    /// `(n, bytes)` of the stored projection states of `keys` (`n`: the key's place in
    /// `keys`, from 1; `PostgresRows.keyed` reads them), in one statement however many keys:
    /// a read's and a write group's load alike.
    func states(_ keys: [String]) -> PostgresStatement {
        PostgresStatement("""
            SELECT k.n, s.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(key, n) JOIN \(states) s ON s.key = k.key
            """, doing: "read projections") { $0.append(keys.map { PostgresAccess.text($0) }) }
    }

    /// `(n, value)` of the stored meta values of `keys` (see `states(_:)`).
    func metaValues(_ keys: [String]) -> PostgresStatement {
        PostgresStatement("""
            SELECT k.n, m.value FROM unnest($1::bytea[]) WITH ORDINALITY AS k(key, n) JOIN \(meta) m ON m.key = k.key
            """, doing: "read meta values") { $0.append(keys.map { PostgresAccess.text($0) }) }
    }

    /// `(n, bytes)` of the stored records of `keys` (see `states(_:)`).
    func records(_ keys: [PostgresPendingWrites.RecordKey]) -> PostgresStatement {
        PostgresStatement("""
            SELECT k.n, r.bytes FROM unnest($1::int2[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS k(kind, owner, id, n)
            JOIN \(records) r ON r.kind = k.kind AND r.owner = k.owner AND r.id = k.id
            """, doing: "read records") {
            $0.append(keys.map(\.kind)); $0.append(keys.map { PostgresAccess.text($0.owner) }); $0.append(keys.map { PostgresAccess.text($0.id) })
        }
    }

    /// `(key, bytes, version, seq)` of the projection states from `key` on, each with its stream's latest index entry (NULLs for a stream
    /// without one): the primary key's range, then one probe of `(stream, version)` per row.
    func statesFrom(_ key: ByteBuffer, limit: Int) -> PostgresStatement {
        PostgresStatement("""
            SELECT s.key, s.bytes, e.version, e.seq FROM \(states) s LEFT JOIN LATERAL
            (SELECT version, seq FROM \(events) WHERE stream = s.key ORDER BY version DESC LIMIT 1) e ON true
            WHERE s.key >= $1 ORDER BY s.key LIMIT \(limit)
            """, doing: "scan the projections from a key") { $0.append(key) }
    }

    /// `(key, value)` of the meta values whose key starts with `prefix` (its last byte below 0xff).
    func metaPrefixed(_ prefix: String) -> PostgresStatement {
        var upper = Array(prefix.utf8)
        upper[upper.count - 1] += 1
        return PostgresStatement("SELECT key, value FROM \(meta) WHERE key >= $1 AND key < $2", doing: "read meta values") {
            $0.append(PostgresAccess.text(prefix)); $0.append(PostgresAccess.bytes(upper))
        }
    }

    var allRecords: PostgresStatement { PostgresStatement("SELECT kind, owner, id, bytes FROM \(records)", doing: "read the records") }
    var recordCounts: PostgresStatement { PostgresStatement("SELECT kind, count(*) FROM \(records) GROUP BY kind", doing: "count records") }
    var eventCount: PostgresStatement { PostgresStatement("SELECT count(*) FROM \(events)", doing: "count the events") }
    var treeCount: PostgresStatement {
        PostgresStatement("SELECT coalesce(sum(length(hashes) / 32), 0)::int8 FROM \(tiles)", doing: "count the tree hashes")
    }
}

/// The decoding of the statements' rows (a value PostgreSQL should not hold is `tampered`).
enum PostgresRows {
    static func decode<T: PostgresDecodable>(_ row: PostgresRow, _ type: T.Type, doing: String) throws -> T {
        do { return try row.decode(T.self) } catch { throw unexpected(doing) }
    }

    static func decode<each T: PostgresDecodable>(_ row: PostgresRow, _ types: (repeat each T).Type, doing: String) throws -> (repeat each T) {
        do { return try row.decode(types) } catch { throw unexpected(doing) }
    }

    static func unexpected(_ doing: String) -> LedgerError { LedgerError(.tampered, "unexpected value in the PostgreSQL store (\(doing))") }

    /// A row of `headRow` (or the write's lock of it): the head.
    static func head(_ row: PostgresRow) throws -> Head {
        let (seq, hash) = try decode(row, (Int64, ByteBuffer).self, doing: "read the head")
        guard hash.readableBytes == 32 else { throw LedgerError(.tampered, "malformed head") }
        return Head(seq: UInt64(bitPattern: seq), hash: Hash32(bytes: Array(hash.readableBytesView)))
    }

    /// The values of the rows of a keyed read (`PostgresTables.states(_:)`, `metaValues`,
    /// `records`) by the keys' places in its `count` keys: nil for a key not stored.
    static func keyed(_ rows: some Sequence<PostgresRow>, count: Int, doing: String) throws -> [[UInt8]?] {
        var out = [[UInt8]?](repeating: nil, count: count)
        for row in rows {
            let (n, bytes) = try decode(row, (Int64, ByteBuffer).self, doing: doing)
            guard n >= 1, n <= count else { throw unexpected(doing) }
            out[Int(n) - 1] = Array(bytes.readableBytesView)
        }
        return out
    }

    /// The first row's one integer column, or nil when there is no row.
    static func integer(_ rows: [PostgresRow], doing: String) throws -> UInt64? {
        guard let row = rows.first else { return nil }
        return UInt64(bitPattern: try decode(row, Int64.self, doing: doing))
    }

    /// The checkpoint meta value as a seq (0 when there is none).
    static func checkpoint(_ v: [UInt8]?) -> UInt64 {
        guard let v, v.count == 8 else { return 0 }
        return v.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// Calls `body` with each stored hash of `range` that the rows of `tiles(covering:)`
    /// hold, in index order, up to the first index none holds.
    static func forEachTreeHash(_ rows: some Sequence<PostgresRow>, in range: Range<UInt64>, doing: String,
                                _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        try PostgresTiles.forEach(try rows.map { row in
            let (tile, hashes) = try decode(row, (Int64, ByteBuffer).self, doing: doing)
            return (UInt64(bitPattern: tile), hashes)
        }, in: range, body)
    }
}

/// The Merkle tree's tiles (`PostgresSchema`, version 3): tile `k` holds the 32-byte
/// hashes of the stored indexes `width × k` to `width × k + width − 1`, one after the
/// other, from the first. 128 hashes (4 KB) a tile: a row stays in its page, uncompressed
/// (`STORAGE PLAIN`), so that appending to a partial tile rewrites 4 KB at most in place of
/// a TOASTed value's chunks, and a hash is cut from it without a TOAST read.
package enum PostgresTiles {
    package static let width: UInt64 = 128

    /// Calls `body` with each hash of `range` that `tiles` (in tile order) hold, in index
    /// order, up to the first index that none holds (a gap: what follows it is not read).
    static func forEach(_ tiles: [(tile: UInt64, hashes: ByteBuffer)], in range: Range<UInt64>,
                        _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        var next = range.lowerBound
        for (tile, hashes) in tiles where next < range.upperBound {
            guard hashes.readableBytes % 32 == 0 else { throw LedgerError(.tampered, "malformed tree hash") }
            let first = tile &* width
            guard tile < UInt64.max / width, first <= next, next < first + UInt64(hashes.readableBytes / 32) else { return }
            let stop = min(range.upperBound, first + UInt64(hashes.readableBytes / 32))
            try hashes.withUnsafeReadableBytes { all in
                for i in next..<stop {
                    let at = Int(i - first) * 32
                    try body(i, UnsafeRawBufferPointer(rebasing: all[at..<(at + 32)]))
                }
            }
            next = stop
        }
    }
}
