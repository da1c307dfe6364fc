import AuthLedgerCore
import Foundation
import NIOCore
import PostgresNIO

/// Reads and writes of one PostgreSQL transaction (see `PostgresStorage`). Keys are
/// stored as bytes (UTF-8 for stream keys, users, ids and meta keys; 16 bytes for event
/// ids), so no collation or encoding of the database can reorder or refuse them.
final class PostgresAccess: StorageWriter {
    let s: PostgresSession
    let t: PostgresTables
    private var savepoints = 0
    /// Rows fetched per query by the scans (the scans run in one snapshot, page by page).
    static let page = 512

    let instance: String

    /// Inserts waiting to go as multi-row statements (`PostgresRowBuffer`): sent before any
    /// other statement (so statements keep their order relative to savepoints, reads and
    /// the head), at the end of each request's savepoint and before COMMIT. Projections are
    /// kept by key (one row per key in an upsert: PostgreSQL refuses to update a row twice
    /// in one statement), the last state written winning as it would statement by statement.
    private var eventRows: PostgresRowBuffer
    private var treeRows: PostgresRowBuffer
    private var personalRows: PostgresRowBuffer
    private var stateOrder: [String] = []
    private var states: [String: [UInt8]] = [:]

    init(session: PostgresSession, tables: PostgresTables, instance: String) {
        self.s = session
        self.t = tables
        self.instance = instance
        eventRows = PostgresRowBuffer(insert: "INSERT INTO \(tables.events) (seq, id, stream, version, bytes)", columns: 5, doing: "store events")
        treeRows = PostgresRowBuffer(insert: "INSERT INTO \(tables.tree) (idx, hash)", columns: 2, doing: "store tree hashes")
        personalRows = PostgresRowBuffer(insert: "INSERT INTO \(tables.personal) (seq, owner, bytes)", columns: 3, doing: "store personal values")
    }

    /// Sends the buffered rows (without waiting for the answers).
    private func flush() {
        for keyPath in [\PostgresAccess.eventRows, \.treeRows, \.personalRows] where !self[keyPath: keyPath].isEmpty {
            let doing = self[keyPath: keyPath].doing
            let (sql, b) = self[keyPath: keyPath].take()
            inFlight.append((s.send(sql, b), doing))
        }
        if !stateOrder.isEmpty {
            var buffer = PostgresRowBuffer(insert: "INSERT INTO \(t.states) (key, bytes)", columns: 2,
                                           suffix: " ON CONFLICT (key) DO UPDATE SET bytes = EXCLUDED.bytes", doing: "store projections")
            for key in stateOrder {
                guard let bytes = states[key] else { continue }
                buffer.append { $0.append(Self.text(key)); $0.append(Self.bytes(bytes)) }
                if buffer.isFull {
                    let (sql, b) = buffer.take()
                    inFlight.append((s.send(sql, b), buffer.doing))
                }
            }
            if !buffer.isEmpty {
                let (sql, b) = buffer.take()
                inFlight.append((s.send(sql, b), buffer.doing))
            }
            stateOrder = []
            states = [:]
        }
    }

    /// Forgets the buffered rows (their request is being rolled back).
    private func discardBuffered() {
        eventRows.discard()
        treeRows.discard()
        personalRows.discard()
        stateOrder = []
        states = [:]
    }

    /// Buffers a row; a full buffer is sent at once.
    private func buffer(_ keyPath: ReferenceWritableKeyPath<PostgresAccess, PostgresRowBuffer>, _ add: (inout PostgresBindings) -> Void) throws {
        self[keyPath: keyPath].append(add)
        if self[keyPath: keyPath].isFull {
            let doing = self[keyPath: keyPath].doing
            let (sql, b) = self[keyPath: keyPath].take()
            inFlight.append((s.send(sql, b), doing))
            if inFlight.count >= 256 { try drain() }
        }
    }

    // MARK: Binding helpers

    private func binds(_ build: (inout PostgresBindings) -> Void) -> PostgresBindings {
        var b = PostgresBindings()
        build(&b)
        return b
    }

    private static func int(_ v: UInt64) -> Int64 { Int64(bitPattern: v) }
    private static func bytes(_ a: [UInt8]) -> ByteBuffer { ByteBuffer(bytes: a) }
    private static func text(_ s: String) -> ByteBuffer { ByteBuffer(string: s) }

    private func one(_ sql: String, _ b: PostgresBindings, doing: String) throws -> PostgresRow? {
        try q(sql, b, doing: doing).first
    }

    // MARK: Pipelined writes

    /// Writes sent and not yet answered. Writes do not wait for their answer: the writer
    /// thread goes on encoding the next event while PostgreSQL runs them, and the answers
    /// are collected (`drain`) before the next read, at the end of each request's
    /// savepoint (so a refused statement is still that request's) and before COMMIT.
    private var inFlight: [(EventLoopFuture<PostgresQueryResult>, String)] = []

    private func send(_ sql: String, _ b: PostgresBindings = PostgresBindings(), doing: String) throws {
        flush()
        inFlight.append((s.send(sql, b), doing))
        if inFlight.count >= 256 { try drain() }
    }

    /// Waits for every write sent; throws the first failure.
    func drain() throws {
        flush()
        let pending = inFlight
        inFlight = []
        var first: (any Error)?
        for (future, doing) in pending {
            do { _ = try future.wait() } catch {
                if first == nil { first = PostgresFailure(error, doing: doing, location: s.location) }
            }
        }
        if let first { throw first }
    }

    /// A read: the writes before it are answered first (their failure is reported, not
    /// the "transaction is aborted" of the read).
    private func q(_ sql: String, _ b: PostgresBindings = PostgresBindings(), doing: String) throws -> [PostgresRow] {
        try drain()
        return try s.query(sql, b, doing: doing)
    }

    private func bytesValue(_ sql: String, _ b: PostgresBindings, doing: String) throws -> [UInt8]? {
        guard let row = try one(sql, b, doing: doing) else { return nil }
        let buffer = try decode(row, ByteBuffer.self, doing: doing)
        return Array(buffer.readableBytesView)
    }

    private func decode<T: PostgresDecodable>(_ row: PostgresRow, _ type: T.Type, doing: String) throws -> T {
        do { return try row.decode(T.self) } catch { throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (\(doing))") }
    }

    private func decode2<A: PostgresDecodable, B: PostgresDecodable>(_ row: PostgresRow, _ a: A.Type, _ b: B.Type, doing: String) throws -> (A, B) {
        do { return try row.decode((A, B).self) } catch { throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (\(doing))") }
    }

    private func count(_ sql: String, doing: String) throws -> Int {
        guard let row = try one(sql, PostgresBindings(), doing: doing) else { return 0 }
        return Int(try decode(row, Int64.self, doing: doing))
    }

    // MARK: StorageReader

    func head() throws -> Head {
        guard let row = try one("SELECT seq, hash FROM \(t.head)", PostgresBindings(), doing: "read the head") else { return .empty }
        let (seq, hash) = try decode2(row, Int64.self, ByteBuffer.self, doing: "read the head")
        guard hash.readableBytes == 32 else { throw LedgerError(.tampered, "malformed head") }
        return Head(seq: UInt64(bitPattern: seq), hash: Hash32(bytes: Array(hash.readableBytesView)))
    }

    func withEventBytes<T>(_ seq: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        let row = try one("SELECT bytes FROM \(t.events) WHERE seq = $1", binds { $0.append(Self.int(seq)) }, doing: "read an event")
        guard let row else { return try body(nil) }
        let buffer = try decode(row, ByteBuffer.self, doing: "read an event")
        return try buffer.withUnsafeReadableBytes { try body($0) }
    }

    func seq(forId id: EventID) throws -> UInt64? {
        let row = try one("SELECT seq FROM \(t.events) WHERE id = $1", binds { $0.append(Self.bytes(id.bytes)) }, doing: "find an event id")
        return try row.map { UInt64(bitPattern: try decode($0, Int64.self, doing: "find an event id")) }
    }

    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        var next = Int64(bitPattern: min(from, UInt64(Int64.max)))
        while true {
            let rows = try q("SELECT seq, bytes FROM \(t.events) WHERE seq >= $1 ORDER BY seq LIMIT \(Self.page)",
                                   binds { $0.append(next) }, doing: "scan the log")
            for row in rows {
                let (seq, buffer) = try decode2(row, Int64.self, ByteBuffer.self, doing: "scan the log")
                if try !buffer.withUnsafeReadableBytes({ try body(UInt64(bitPattern: seq), $0) }) { return }
                next = seq + 1
            }
            if rows.count < Self.page { return }
        }
    }

    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try scanStream(stream, fromVersion: 0, body)
    }

    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
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
        let row = try one("SELECT seq FROM \(t.events) WHERE stream = $1 AND version = $2",
                          binds { $0.append(Self.text(stream)); $0.append(Self.int(version)) }, doing: "find a stream version")
        return try row.map { UInt64(bitPattern: try decode($0, Int64.self, doing: "find a stream version")) }
    }

    func projectionState(_ key: String) throws -> [UInt8]? {
        try bytesValue("SELECT bytes FROM \(t.states) WHERE key = $1", binds { $0.append(Self.text(key)) }, doing: "read a projection")
    }

    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
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
        try bytesValue("SELECT value FROM \(t.meta) WHERE key = $1", binds { $0.append(Self.text(key)) }, doing: "read a meta value")
    }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) {
        // The id and stream indexes are unique indexes of the events table: one entry per row.
        let n = try count("SELECT count(*) FROM \(t.events)", doing: "count the events")
        return (n, n, n)
    }

    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        try bytesValue("SELECT bytes FROM \(t.personal) WHERE seq = $1", binds { $0.append(Self.int(seq)) }, doing: "read personal values")
    }

    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        let rows = try q("SELECT seq, bytes FROM \(t.personal) WHERE owner = $1 ORDER BY seq",
                               binds { $0.append(Self.text(user)) }, doing: "scan personal values")
        for row in rows {
            let (seq, buffer) = try decode2(row, Int64.self, ByteBuffer.self, doing: "scan personal values")
            if try !buffer.withUnsafeReadableBytes({ try body(UInt64(bitPattern: seq), $0) }) { return }
        }
    }

    func record(_ kind: RecordKind, user: String, id: String) throws -> [UInt8]? {
        try bytesValue("SELECT bytes FROM \(t.records) WHERE kind = $1 AND owner = $2 AND id = $3",
                       binds { $0.append(Int16(kind.rawValue)); $0.append(Self.text(user)); $0.append(Self.text(id)) },
                       doing: "read a record")
    }

    func recordCount(_ kind: RecordKind) throws -> Int {
        guard let row = try one("SELECT count(*) FROM \(t.records) WHERE kind = $1", binds { $0.append(Int16(kind.rawValue)) },
                                doing: "count records") else { return 0 }
        return Int(try decode(row, Int64.self, doing: "count records"))
    }

    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        let row = try one("SELECT hash FROM \(t.tree) WHERE idx = $1", binds { $0.append(Self.int(index)) }, doing: "read a tree hash")
        guard let row else { return try body(nil) }
        let buffer = try decode(row, ByteBuffer.self, doing: "read a tree hash")
        return try buffer.withUnsafeReadableBytes { try body($0) }
    }

    func treeHashCount() throws -> UInt64 {
        UInt64(try count("SELECT count(*) FROM \(t.tree)", doing: "count the tree hashes"))
    }

    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        var next = Int64(bitPattern: min(from, UInt64(Int64.max)))
        while true {
            let rows = try q("SELECT idx, hash FROM \(t.tree) WHERE idx >= $1 ORDER BY idx LIMIT \(Self.page * 4)",
                                   binds { $0.append(next) }, doing: "scan the tree")
            for row in rows {
                let (idx, buffer) = try decode2(row, Int64.self, ByteBuffer.self, doing: "scan the tree")
                if try !buffer.withUnsafeReadableBytes({ try body(UInt64(bitPattern: idx), $0) }) { return }
                next = idx + 1
            }
            if rows.count < Self.page * 4 { return }
        }
    }

    // MARK: StorageWriter

    func putEvent(seq: UInt64, id: EventID, stream: String, version: UInt64, bytes: [UInt8]) throws {
        try buffer(\.eventRows) {
            $0.append(Self.int(seq)); $0.append(Self.bytes(id.bytes)); $0.append(Self.text(stream))
            $0.append(Self.int(version)); $0.append(Self.bytes(bytes))
        }
    }

    /// Moves the head and, in the same statement, notifies the other servers (delivered at
    /// COMMIT; see `PostgresCommitListener`).
    func setHead(_ head: Head) throws {
        try send("""
            WITH moved AS (UPDATE \(t.head) SET seq = $1, hash = $2 RETURNING seq)
            SELECT pg_notify($3, $4) FROM moved
            """,
            binds {
                $0.append(Self.int(head.seq)); $0.append(Self.bytes(head.hash.bytes))
                $0.append(t.schema); $0.append("\(head.seq) \(head.hash) \(instance)")
            }, doing: "advance the head")
    }

    func putProjectionState(_ key: String, _ bytes: [UInt8]) throws {
        if states.updateValue(bytes, forKey: key) == nil { stateOrder.append(key) }
    }

    func clearProjectionStates() throws {
        try send("DELETE FROM \(t.states)", doing: "clear the projections")
    }

    func putRecord(_ kind: RecordKind, user: String, id: String, _ bytes: [UInt8]) throws {
        try send("""
            INSERT INTO \(t.records) (kind, owner, id, bytes) VALUES ($1, $2, $3, $4)
            ON CONFLICT (kind, owner, id) DO UPDATE SET bytes = EXCLUDED.bytes
            """,
            binds { $0.append(Int16(kind.rawValue)); $0.append(Self.text(user)); $0.append(Self.text(id)); $0.append(Self.bytes(bytes)) },
            doing: "store a record")
    }

    func clearRecords() throws {
        try send("DELETE FROM \(t.records)", doing: "clear the records")
    }

    func setCheckpoint(_ seq: UInt64) throws {
        try putMetaValue("checkpoint", seq.bigEndianBytes)
    }

    func putMetaValue(_ key: String, _ bytes: [UInt8]?) throws {
        if let bytes {
            try send("INSERT INTO \(t.meta) (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                        binds { $0.append(Self.text(key)); $0.append(Self.bytes(bytes)) }, doing: "store a meta value")
        } else {
            try send("DELETE FROM \(t.meta) WHERE key = $1", binds { $0.append(Self.text(key)) }, doing: "delete a meta value")
        }
    }

    func putPersonalValues(user: String, seq: UInt64, _ bytes: [UInt8]) throws {
        try buffer(\.personalRows) { $0.append(Self.int(seq)); $0.append(Self.text(user)); $0.append(Self.bytes(bytes)) }
    }

    func erasePersonalValues(user: String, before: UInt64) throws -> [UInt64] {
        let rows = try q("DELETE FROM \(t.personal) WHERE owner = $1 AND seq < $2 RETURNING seq",
                               binds { $0.append(Self.text(user)); $0.append(Self.int(before)) }, doing: "erase personal values")
        return try rows.map { UInt64(bitPattern: try decode($0, Int64.self, doing: "erase personal values")) }.sorted()
    }

    func appendTreeHash(_ index: UInt64, _ hash: UnsafeRawBufferPointer) throws {
        try buffer(\.treeRows) { $0.append(Self.int(index)); $0.append(ByteBuffer(bytes: hash)) }
    }

    func clearTree() throws {
        try send("DELETE FROM \(t.tree)", doing: "clear the tree")
    }

    func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepoints += 1
        defer { savepoints -= 1 }
        let name = "authledger_\(savepoints)"
        try send("SAVEPOINT \(name)", doing: "savepoint")
        let result: T
        do {
            result = try body()
            try drain()
        } catch {
            // The writes still in flight are rolled back with the savepoint.
            discardBuffered()
            _ = try? drain()
            do {
                try q("ROLLBACK TO SAVEPOINT \(name)", doing: "rollback to savepoint")
            } catch let e as PostgresFailure {
                throw PostgresFailure(spoiling: e)
            }
            throw error
        }
        try send("RELEASE SAVEPOINT \(name)", doing: "release savepoint")
        return result
    }
}
