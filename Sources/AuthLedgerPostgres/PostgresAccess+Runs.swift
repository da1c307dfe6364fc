import AuthLedgerCore
import NIOCore
import PostgresNIO

/// The log and the tree in runs (`AsyncBatchScanning`: the replay's one scan, `verify`'s
/// indexed runs): the server aggregates a run into one row of arrays, so PostgresNIO carries
/// and decodes one message per run instead of one per event (its per-row work was most of a
/// replay's client CPU), and the arrays' binary form is read in place here.
extension PostgresAccess {
    /// Sends the two statements of a replay's run: its events, and the tree hashes their leaves complete.
    static func sendRun(_ s: PostgresSession, _ t: PostgresTables, from: UInt64, count: Int) -> [PostgresSent] {
        [s.send(PostgresStatement("""
            SELECT array_agg(r.seq), array_agg(r.bytes), array_agg(r.p) FROM (
                SELECT e.seq, e.bytes, p.bytes AS p FROM \(t.events) e LEFT JOIN \(t.personal) p ON p.seq = e.seq
                WHERE e.seq >= $1 AND e.seq < $2 ORDER BY e.seq) r
            """, doing: "scan the log") { $0.append(int(from)); $0.append(int(from + UInt64(count))) }),
         s.send(t.tiles(covering: LogBatch.treeRange(from: from, count: count)))]
    }

    /// Sends the two statements of a run of `verify` (`IndexedRun`): the first `count` events
    /// from seq `from` on, with their personal values and index keys, and the tree hashes
    /// the leaves from `max(from, 1)` on complete.
    static func sendIndexedRun(_ s: PostgresSession, _ t: PostgresTables, from: UInt64, count: Int) -> [PostgresSent] {
        [s.send(PostgresStatement("""
            SELECT array_agg(r.seq), array_agg(r.version), array_agg(r.bytes), array_agg(r.p), array_agg(r.id), array_agg(r.stream) FROM (
                SELECT e.seq, e.version, e.bytes, p.bytes AS p, e.id, e.stream FROM \(t.events) e LEFT JOIN \(t.personal) p ON p.seq = e.seq
                WHERE e.seq >= $1 ORDER BY e.seq LIMIT $2) r
            """, doing: "scan the log") { $0.append(PostgresLoaded.key(from)); $0.append(Int64(count)) }),
         s.send(t.tiles(covering: LogBatch.treeRange(from: max(from, 1), count: count)))]
    }

    /// The replay's run from the answers of `sendRun`.
    static func run(_ answers: [PostgresQueryResult], from: UInt64, count: Int) throws -> LogBatch {
        // The events' and the personal values' arrays side by side in one buffer.
        let (integers, data, columns) = try arrays(answers[0], integers: 1, columns: 3)
        let (seqs, events, personal) = (integers[0], columns[0], columns[1])
        // Every seq of the run, in order: the arrays were aggregated from seq order.
        guard seqs.count == count, events.count == count, personal.count == count else {
            throw LedgerError(.tampered, "event missing", seq: from + UInt64(min(seqs.count, events.count)))
        }
        for k in 0..<count where seqs[k] != from + UInt64(k) || events[k] == nil {
            throw LedgerError(.tampered, "event missing", seq: from + UInt64(k))
        }
        // The hashes of the run's range that the tiles hold, in order, up to a gap (fewer: not intact).
        let tree = try runTree(answers[1], LogBatch.treeRange(from: from, count: count))
        return LogBatch(first: from, data: data, events: events.map { $0! }, personal: personal, tree: tree)
    }

    /// `verify`'s run from the answers of `sendIndexedRun`.
    static func indexedRun(_ answers: [PostgresQueryResult], from: UInt64, count: Int) throws -> IndexedRun {
        // The events', personal values', ids' and streams' arrays side by side in one buffer.
        let (integers, data, columns) = try arrays(answers[0], integers: 2, columns: 6)
        let (seqs, versions) = (integers[0], integers[1])
        guard versions.count == seqs.count, columns.allSatisfy({ $0.count == seqs.count }) else { throw PostgresRows.unexpected("scan the log") }
        var events: [IndexedRun.Event] = []
        events.reserveCapacity(seqs.count)
        for k in seqs.indices {
            guard let bytes = columns[0][k], let id = columns[2][k], let stream = columns[3][k] else { throw PostgresRows.unexpected("scan the log") }
            events.append(IndexedRun.Event(seq: seqs[k], bytes: bytes, personal: columns[1][k], id: id, stream: stream, version: versions[k]))
        }
        // The hashes stored up to a gap, zeros after it.
        let range = LogBatch.treeRange(from: max(from, 1), count: count)
        let tree = try runTree(answers[1], range), stored = tree.count / 32
        let zeros = [UInt8](repeating: 0, count: 32 * (range.count - stored))
        return IndexedRun(data: data, events: events, treeIndexes: range, tree: tree + zeros, stored: (0..<range.count).map { $0 < stored })
    }

    /// The one row of arrays a run's events statement answers: its first `integers` arrays as
    /// int8s (none NULL), the others side by side in one buffer, each element a range of it
    /// (nil: NULL). A NULL array (an aggregate over no rows) has no elements.
    private static func arrays(_ result: PostgresQueryResult, integers: Int,
                               columns: Int) throws -> (integers: [[UInt64]], data: [UInt8], columns: [[Range<Int>?]]) {
        guard let row = result.rows.first else { throw PostgresRows.unexpected("scan the log") }
        // The cells' bytes as PostgresNIO received them (no copy), then copied once into `data`.
        let cells = row.map { $0.bytes ?? ByteBuffer() }
        guard cells.count == columns else { throw PostgresRows.unexpected("scan the log") }
        var data: [UInt8] = []
        data.reserveCapacity(cells[integers...].reduce(0) { $0 + $1.readableBytes })
        var ranges: [[Range<Int>?]] = []
        for cell in cells[integers...] {
            let base = data.count
            data.append(contentsOf: cell.readableBytesView)
            ranges.append(try data.withUnsafeBytes { try elements(UnsafeRawBufferPointer(rebasing: $0[base...]), base: base) })
        }
        let ints = try cells[..<integers].map { cell in
            try cell.withUnsafeReadableBytes { a in
                try elements(a, base: 0).map { range in
                    guard let range, range.count == 8 else { throw PostgresRows.unexpected("scan the log") }
                    return UInt64(bigEndian: a.loadUnaligned(fromByteOffset: range.lowerBound, as: UInt64.self))
                }
            }
        }
        return (ints, data, ranges)
    }

    /// The stored hashes of `range` the tiles of a run's answer hold, one after the other, up to a gap.
    private static func runTree(_ tiles: PostgresQueryResult, _ range: Range<UInt64>) throws -> [UInt8] {
        var tree: [UInt8] = []
        tree.reserveCapacity(32 * range.count)
        try PostgresTiles.forEach(try tiles.rows.map { row in
            let (tile, hashes) = try PostgresRows.decode(row, (Int64, ByteBuffer).self, doing: "scan the tree")
            return (UInt64(bitPattern: tile), hashes)
        }, in: range) { _, hash in tree.append(contentsOf: hash) }
        return tree
    }

    /// Whether a tree hash is stored outside indexes `0..<count`: two ends of the primary
    /// key's index (the last tile's last hash, the first tile), not a scan of the table.
    static func treeOutsideStatement(_ t: PostgresTables, _ count: UInt64) -> PostgresStatement {
        PostgresStatement("""
            SELECT coalesce((SELECT tile * \(PostgresTiles.width) + length(hashes) / 32 - 1 FROM \(t.tiles) ORDER BY tile DESC LIMIT 1) >= $1
                OR (SELECT min(tile) FROM \(t.tiles)) < 0, false)
            """, doing: "check the tree") { $0.append(int(count)) }
    }

    /// The elements of a one-dimensional array in PostgreSQL's binary form (`array_send`):
    /// each one's bytes as a range of `a`, moved by `base`; nil for NULL. Empty bytes (NULL:
    /// an aggregate over no rows) and an empty array have no elements.
    static func elements(_ a: UnsafeRawBufferPointer, base: Int) throws -> [Range<Int>?] {
        func int32(_ at: Int) throws -> Int {
            guard at >= 0, at + 4 <= a.count else { throw PostgresRows.unexpected("read an array") }
            return Int(Int32(bigEndian: a.loadUnaligned(fromByteOffset: at, as: Int32.self)))
        }
        if a.isEmpty { return [] }
        let dimensions = try int32(0)
        if dimensions == 0 { return [] }
        guard dimensions == 1 else { throw PostgresRows.unexpected("read an array") }
        let n = try int32(12)
        var at = 20
        var out: [Range<Int>?] = []
        out.reserveCapacity(max(0, n))
        for _ in 0..<max(0, n) {
            let length = try int32(at)
            at += 4
            if length < 0 { out.append(nil); continue }
            guard at + length <= a.count else { throw PostgresRows.unexpected("read an array") }
            out.append((base + at)..<(base + at + length))
            at += length
        }
        return out
    }
}

extension PostgresTables {
    /// `(tile, hashes)` of the tiles holding the stored indexes `range`, in order (schema
    /// version 3: a tile holds the hashes of `PostgresTiles.width` consecutive indexes), which
    /// `runTree` cuts: a tile is read once, not once per hash.
    func tiles(covering range: Range<UInt64>) -> PostgresStatement {
        let (lo, hi) = range.isEmpty ? (Int64(1), Int64(0))
            : (Int64(range.lowerBound / PostgresTiles.width), Int64((range.upperBound - 1) / PostgresTiles.width))
        return PostgresStatement("SELECT tile, hashes FROM \(tiles) WHERE tile >= $1 AND tile <= $2 ORDER BY tile",
                                 doing: "scan the tree") { $0.append(lo); $0.append(hi) }
    }
}
