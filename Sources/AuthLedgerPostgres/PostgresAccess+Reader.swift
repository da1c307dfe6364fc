import AuthLedgerCore
import Foundation
import NIOCore
import PostgresNIO

/// The reads of a PostgreSQL transaction (see `PostgresAccess`).
extension PostgresAccess {
    func head() throws -> Head {
        if let h = knownHead { return h }
        guard let row = try one("SELECT seq, hash FROM \(t.head)", PostgresBindings(), doing: "read the head") else { return .empty }
        return try Self.decodeHead(row)
    }

    static func decodeHead(_ row: PostgresRow) throws -> Head {
        let seq: Int64, hash: ByteBuffer
        do { (seq, hash) = try row.decode((Int64, ByteBuffer).self) } catch {
            throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (read the head)")
        }
        guard hash.readableBytes == 32 else { throw LedgerError(.tampered, "malformed head") }
        return Head(seq: UInt64(bitPattern: seq), hash: Hash32(bytes: Array(hash.readableBytesView)))
    }

    func withEventBytes<T>(_ seq: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        if let bytes = layered({ $0.event(seq: seq) }) { return try bytes.withUnsafeBytes { try body($0) } }
        let row = try one("SELECT bytes FROM \(t.events) WHERE seq = $1", binds { $0.append(Self.int(seq)) }, doing: "read an event")
        guard let row else { return try body(nil) }
        let buffer = try decode(row, ByteBuffer.self, doing: "read an event")
        return try buffer.withUnsafeReadableBytes { try body($0) }
    }

    func seq(forId id: EventID) throws -> UInt64? {
        if let seq = layered({ $0.seq(id: id) }) { return seq }
        if let known = cache.ids[id] { return known }
        let row = try one("SELECT seq FROM \(t.events) WHERE id = $1", binds { $0.append(Self.bytes(id.bytes)) }, doing: "find an event id")
        let seq = try row.map { UInt64(bitPattern: try decode($0, Int64.self, doing: "find an event id")) }
        cache.ids[id] = .some(seq)
        return seq
    }

    /// The log from `from` on, with each event's personal values (kept for
    /// `personalValues(user:seq:)`, which a replay asks for every event that has some):
    /// pages that grow from `page` to `scanPage` rows, so a short read fetches little and
    /// a replay or an export few large pages.
    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try sendAll()
        var next = Int64(bitPattern: min(from, UInt64(Int64.max)))
        var page = Self.page
        while true {
            let rows = try q("""
                SELECT e.seq, e.bytes, p.bytes FROM \(t.events) e LEFT JOIN \(t.personal) p ON p.seq = e.seq
                WHERE e.seq >= $1 ORDER BY e.seq LIMIT \(page)
                """, binds { $0.append(next) }, doing: "scan the log")
            var decoded: [(Int64, ByteBuffer)] = []
            decoded.reserveCapacity(rows.count)
            cache.personal.removeAll(keepingCapacity: true)
            for row in rows {
                let (k, buffer, personal): (Int64, ByteBuffer, ByteBuffer?)
                do { (k, buffer, personal) = try row.decode((Int64, ByteBuffer, ByteBuffer?).self) } catch {
                    throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (scan the log)")
                }
                cache.personal[UInt64(bitPattern: k)] = .some(personal.map { Array($0.readableBytesView) })
                decoded.append((k, buffer))
            }
            for (k, buffer) in decoded {
                if try !buffer.withUnsafeReadableBytes({ try body(UInt64(bitPattern: k), $0) }) { return }
                next = k + 1
            }
            if rows.count < page { return }
            page = min(page * 2, Self.scanPage)
        }
    }

    /// Every row of `table` with `key >= from`, in key order, a page at a time (keyset
    /// paging), after this transaction's deferred writes are sent; `body` returns false to stop.
    func pagedScan(_ table: String, key: String, value: String, page: Int, from: UInt64, doing: String,
                           _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try sendAll()
        var next = Int64(bitPattern: min(from, UInt64(Int64.max)))
        while true {
            let rows = try q("SELECT \(key), \(value) FROM \(table) WHERE \(key) >= $1 ORDER BY \(key) LIMIT \(page)",
                             binds { $0.append(next) }, doing: doing)
            for row in rows {
                let (k, buffer) = try decode2(row, Int64.self, ByteBuffer.self, doing: doing)
                if try !buffer.withUnsafeReadableBytes({ try body(UInt64(bitPattern: k), $0) }) { return }
                next = k + 1
            }
            if rows.count < page { return }
        }
    }

    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try scanStream(stream, fromVersion: 0, body)
    }

    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try sendAll()
        var next = Int64(bitPattern: min(version, UInt64(Int64.max)))
        let key = Self.text(stream)
        while true {
            let rows = try q("SELECT version, seq FROM \(t.events) WHERE stream = $1 AND version >= $2 ORDER BY version LIMIT \(Self.page)",
                                   binds { $0.append(key); $0.append(next) }, doing: "scan a stream")
            for row in rows {
                let (v, seq) = try decode2(row, Int64.self, Int64.self, doing: "scan a stream")
                if try !body(UInt64(bitPattern: v), UInt64(bitPattern: seq)) { return }
                next = v + 1
            }
            if rows.count < Self.page { return }
        }
    }

    func seq(stream: String, version: UInt64) throws -> UInt64? {
        if let seq = layered({ $0.seq(stream: stream, version: version) }) { return seq }
        let row = try one("SELECT seq FROM \(t.events) WHERE stream = $1 AND version = $2",
                          binds { $0.append(Self.text(stream)); $0.append(Self.int(version)) }, doing: "find a stream version")
        return try row.map { UInt64(bitPattern: try decode($0, Int64.self, doing: "find a stream version")) }
    }

    func projectionState(_ key: String) throws -> [UInt8]? {
        if let bytes = layered({ $0.state(key) }) { return bytes }
        if let known = cache.states[key] { return known }
        let bytes = try bytesValue("SELECT bytes FROM \(t.states) WHERE key = $1", binds { $0.append(Self.text(key)) }, doing: "read a projection")
        cache.states[key] = .some(bytes)
        return bytes
    }

    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        try sendAll()
        var after: ByteBuffer? = nil
        while true {
            let rows: [PostgresRow]
            if let after {
                rows = try q("SELECT key, bytes FROM \(t.states) WHERE key > $1 ORDER BY key LIMIT \(Self.page)",
                                   binds { $0.append(after) }, doing: "scan the projections")
            } else {
                rows = try q("SELECT key, bytes FROM \(t.states) ORDER BY key LIMIT \(Self.page)",
                                   PostgresBindings(), doing: "scan the projections")
            }
            for row in rows {
                let (key, buffer) = try decode2(row, ByteBuffer.self, ByteBuffer.self, doing: "scan the projections")
                let name = String(decoding: key.readableBytesView, as: UTF8.self)
                if try !buffer.withUnsafeReadableBytes({ try body(name, $0) }) { return }
                after = key
            }
            if rows.count < Self.page { return }
        }
    }

    func checkpoint() throws -> UInt64 {
        guard let v = try metaValue("checkpoint"), v.count == 8 else { return 0 }
        return v.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    func metaValue(_ key: String) throws -> [UInt8]? {
        if let value = layered({ $0.metaValue(key) }) { return value }
        if let known = cache.meta[key] { return known }
        let value = try bytesValue("SELECT value FROM \(t.meta) WHERE key = $1", binds { $0.append(Self.text(key)) }, doing: "read a meta value")
        cache.meta[key] = .some(value)
        return value
    }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) {
        // The id and stream indexes are unique indexes of the events table: one entry per row.
        try sendAll()
        let n = try count("SELECT count(*) FROM \(t.events)", doing: "count the events")
        return (n, n, n)
    }

    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        if let bytes = layered({ $0.personalValues(seq: seq) }) { return bytes }
        if let known = cache.personal[seq] { return known }
        return try bytesValue("SELECT bytes FROM \(t.personal) WHERE seq = $1", binds { $0.append(Self.int(seq)) }, doing: "read personal values")
    }

    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        let rows = try qAll("SELECT seq, bytes FROM \(t.personal) WHERE owner = $1 ORDER BY seq",
                            binds { $0.append(Self.text(user)) }, doing: "scan personal values")
        for row in rows {
            let (seq, buffer) = try decode2(row, Int64.self, ByteBuffer.self, doing: "scan personal values")
            if try !buffer.withUnsafeReadableBytes({ try body(UInt64(bitPattern: seq), $0) }) { return }
        }
    }

    func record(_ kind: RecordKind, user: String, id: String) throws -> [UInt8]? {
        let user = kind.owner(user)
        let key = PostgresPendingWrites.RecordKey(kind: Int16(kind.rawValue), owner: user, id: id)
        if let bytes = layered({ $0.record(key) }) { return bytes }
        if let known = cache.records[key] { return known }
        let bytes = try bytesValue("SELECT bytes FROM \(t.records) WHERE kind = $1 AND owner = $2 AND id = $3",
                                   binds { $0.append(Int16(kind.rawValue)); $0.append(Self.text(user)); $0.append(Self.text(id)) },
                                   doing: "read a record")
        cache.records[key] = .some(bytes)
        return bytes
    }

    func recordCount(_ kind: RecordKind) throws -> Int {
        guard let row = try qAll("SELECT count(*) FROM \(t.records) WHERE kind = $1", binds { $0.append(Int16(kind.rawValue)) },
                                 doing: "count records").first else { return 0 }
        return Int(try decode(row, Int64.self, doing: "count records"))
    }

    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        if let hash = layered({ $0.treeHash(index) }) { return try hash.withUnsafeBytes { try body($0) } }
        // A write's first miss reads the whole frontier of the locked head at once.
        if cache.tree[index] == nil && startHead != nil && !frontierFetched { try fetchFrontier(also: index) }
        if let hash = cache.tree[index] { return try hash.withUnsafeBytes { try body($0) } }
        let row = try one("SELECT hash FROM \(t.tree) WHERE idx = $1", binds { $0.append(Self.int(index)) }, doing: "read a tree hash")
        guard let row else { return try body(nil) }
        let buffer = try decode(row, ByteBuffer.self, doing: "read a tree hash")
        return try buffer.withUnsafeReadableBytes { try body($0) }
    }

    func treeHashCount() throws -> UInt64 {
        try sendAll()
        return UInt64(try count("SELECT count(*) FROM \(t.tree)", doing: "count the tree hashes"))
    }

    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try pagedScan(t.tree, key: "idx", value: "hash", page: Self.page * 4, from: from, doing: "scan the tree", body)
    }
}
