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
}

/// The decoding of the statements' rows (a value PostgreSQL should not hold is `tampered`).
enum PostgresRows {
    static func decode<each T: PostgresDecodable>(_ row: PostgresRow, _ types: (repeat each T).Type, doing: String) throws -> (repeat each T) {
        do { return try row.decode(types) } catch { throw unexpected(doing) }
    }

    /// Every row of `rows` decoded as `types`.
    static func decode<each T: PostgresDecodable>(_ rows: [PostgresRow], _ types: (repeat each T).Type,
                                                  doing: String) throws -> [(repeat each T)] {
        try rows.map { try decode($0, types, doing: doing) }
    }

    static func unexpected(_ doing: String) -> LedgerError { LedgerError(.tampered, "unexpected value in the PostgreSQL store (\(doing))") }

    /// A row of the head's table: the head.
    static func head(_ row: PostgresRow) throws -> Head {
        let (seq, hash) = try decode(row, (Int64, ByteBuffer).self, doing: "read the head")
        guard hash.readableBytes == 32 else { throw LedgerError(.tampered, "malformed head") }
        return Head(seq: UInt64(bitPattern: seq), hash: Hash32(bytes: Array(hash.readableBytesView)))
    }

    /// The values of the rows of a keyed read (`PostgresLoaded.statements`) by the keys'
    /// places in its `count` keys: nil for a key not stored.
    static func keyed(_ rows: [PostgresRow], count: Int, doing: String) throws -> [[UInt8]?] {
        var out = [[UInt8]?](repeating: nil, count: count)
        for (n, bytes) in try decode(rows, (Int64, ByteBuffer).self, doing: doing) {
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
