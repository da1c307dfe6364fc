import AuthLedgerCore
import Foundation
import NIOCore
import PostgresNIO

/// Reads and writes of one PostgreSQL transaction (see `PostgresStorage`). Keys are
/// stored as bytes (UTF-8 for stream keys, users, ids and meta keys; 16 bytes for event
/// ids), so no collation or encoding of the database can reorder or refuse them.
///
/// Writes are kept in memory (`PostgresPendingWrites`) and sent as one statement per
/// table. In a *deferred* transaction (the first attempt of every write) a request of a
/// commit group (`savepoint`) writes into a layer of its own: when it passes, its layer
/// joins the group's; when it is refused, the layer is dropped and PostgreSQL never saw
/// it — no SAVEPOINT, no RELEASE and no wait per request. A request that must send its
/// writes before it ends (it scans, clears or erases, or it writes more than
/// `sendEarly` rows) opens a real savepoint first. If PostgreSQL refuses a statement of
/// a deferred transaction — a reason the ledger's own checks could not see — the
/// failure says `retryStrict`, and `PostgresStorage.write` runs the group again in a
/// *strict* transaction: a savepoint per request, each request's statements answered
/// before the next begins, so the refusal is its request's alone.
final class PostgresAccess: StorageWriter {
    let s: PostgresSession
    let t: PostgresTables
    private var savepoints = 0
    /// Rows fetched per query by the scans (the scans run in one snapshot, page by page).
    static let page = 512
    /// Rows a layer holds before it is sent (when it may be): PostgreSQL then inserts
    /// while the writer encodes the next events.
    static let sendEarly = 4096

    let instance: String
    /// See the type's comment: deferred (first attempt) or strict (after a refusal).
    let deferred: Bool

    /// The transaction's writes not yet sent: outside requests and of the requests that passed.
    private var pending = PostgresPendingWrites()
    /// The current request's writes (inside `savepoint`), nil outside a request.
    private var requestPending: PostgresPendingWrites?
    /// Whether the current request's SAVEPOINT was sent (its writes may then be sent).
    private var savepointOpen = false

    /// The head as this transaction last wrote or read it (the writes' transactions read
    /// it when they lock it, and nobody else can move it while they hold the lock).
    private var knownHead: Head?

    init(session: PostgresSession, tables: PostgresTables, instance: String, deferred: Bool = false, head: Head? = nil) {
        self.s = session
        self.t = tables
        self.instance = instance
        self.deferred = deferred
        knownHead = head
    }

    /// Records a write in the current layer; a layer that may be sent is sent when large.
    private func write(_ change: (inout PostgresPendingWrites) -> Void) throws {
        if requestPending != nil {
            change(&requestPending!)
            if savepointOpen && requestPending!.rowCount >= Self.sendEarly { try sendPending(&requestPending!) }
        } else {
            change(&pending)
            if pending.rowCount >= Self.sendEarly { try sendPending(&pending) }
        }
    }

    /// Sends a layer's statements (without waiting for the answers) and empties it.
    private func sendPending(_ layer: inout PostgresPendingWrites) throws {
        guard !layer.isEmpty else { return }
        let statements = layer.statements(t, instance: instance)
        layer = PostgresPendingWrites()
        for (sql, b, doing) in statements { inFlight.append((s.send(sql, b), doing)) }
        if inFlight.count >= 256 { try drain() }
    }

    /// Sends every write so far, opening the current request's savepoint first if it has
    /// none (before a scan, a clear, an erasure: what the layers cannot answer or order).
    private func sendAll() throws {
        if requestPending != nil && !savepointOpen { try openSavepoint() }
        try sendPending(&pending)
        if requestPending != nil { try sendPending(&requestPending!) }
    }

    private var savepointName: String { "authledger_\(savepoints)" }

    /// Sends the current request's SAVEPOINT, after the group's writes, once every
    /// statement before it was answered (a rollback to it then forgets only the request's).
    private func openSavepoint() throws {
        try sendPending(&pending)
        try drain()
        inFlight.append((s.send("SAVEPOINT \(savepointName)", PostgresBindings()), "savepoint"))
        savepointOpen = true
    }

    /// Sends what is left and waits for every answer (before COMMIT).
    func finishWrites() throws {
        try sendPending(&pending)
        try drain()
    }

    /// Forgets the buffered rows (their transaction is being rolled back).
    func discardPending() {
        pending = PostgresPendingWrites()
        requestPending = nil
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

    /// Statements sent and not yet answered. They do not wait for their answer: the
    /// writer thread goes on encoding the next events while PostgreSQL runs them, and the
    /// answers are collected (`drain`) before a read, at a strict request's end (so a
    /// refused statement is still that request's) and before COMMIT.
    private var inFlight: [(EventLoopFuture<PostgresQueryResult>, String)] = []

    /// Sends a statement after every write recorded before it.
    private func send(_ sql: String, _ b: PostgresBindings = PostgresBindings(), doing: String) throws {
        try sendAll()
        inFlight.append((s.send(sql, b), doing))
        if inFlight.count >= 256 { try drain() }
    }

    /// A failure as this transaction reports it: in a deferred transaction a refused
    /// statement cannot be pinned on one request, so the whole attempt goes and runs again strict.
    private func reported(_ e: PostgresFailure) -> PostgresFailure { deferred ? e.retryingStrict : e }

    /// Waits for every statement sent; throws the first failure.
    func drain() throws {
        let sent = inFlight
        inFlight = []
        var first: PostgresFailure?
        for (future, doing) in sent {
            do { _ = try future.wait() } catch {
                if first == nil { first = PostgresFailure(error, doing: doing, location: s.location) }
            }
        }
        if let first { throw reported(first) }
    }

    /// A read: the statements before it are answered first (their failure is reported,
    /// not the "transaction is aborted" of the read). Point reads look in the layers
    /// before they come here, and need nothing sent; scans call `sendAll` first.
    private func q(_ sql: String, _ b: PostgresBindings = PostgresBindings(), doing: String) throws -> [PostgresRow] {
        try drain()
        do {
            return try s.query(sql, b, doing: doing)
        } catch let e as PostgresFailure {
            throw reported(e)
        }
    }

    /// A scan or count: every write so far is sent first.
    private func qAll(_ sql: String, _ b: PostgresBindings = PostgresBindings(), doing: String) throws -> [PostgresRow] {
        try sendAll()
        return try q(sql, b, doing: doing)
    }

    /// What the layers hold for a point read: the request's own writes, then the group's.
    private func layered<V>(_ look: (PostgresPendingWrites) -> V?) -> V? {
        if let r = requestPending, let v = look(r) { return v }
        return look(pending)
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
        let row = try one("SELECT seq FROM \(t.events) WHERE id = $1", binds { $0.append(Self.bytes(id.bytes)) }, doing: "find an event id")
        return try row.map { UInt64(bitPattern: try decode($0, Int64.self, doing: "find an event id")) }
    }

    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try pagedScan(t.events, key: "seq", value: "bytes", page: Self.page, from: from, doing: "scan the log", body)
    }

    /// Every row of `table` with `key >= from`, in key order, a page at a time (keyset
    /// paging), after this transaction's deferred writes are sent; `body` returns false to stop.
    private func pagedScan(_ table: String, key: String, value: String, page: Int, from: UInt64, doing: String,
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
        return try bytesValue("SELECT bytes FROM \(t.states) WHERE key = $1", binds { $0.append(Self.text(key)) }, doing: "read a projection")
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
        return try bytesValue("SELECT value FROM \(t.meta) WHERE key = $1", binds { $0.append(Self.text(key)) }, doing: "read a meta value")
    }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) {
        // The id and stream indexes are unique indexes of the events table: one entry per row.
        try sendAll()
        let n = try count("SELECT count(*) FROM \(t.events)", doing: "count the events")
        return (n, n, n)
    }

    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        if let bytes = layered({ $0.personalValues(seq: seq) }) { return bytes }
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
        if let bytes = layered({ $0.record(.init(kind: Int16(kind.rawValue), owner: user, id: id)) }) { return bytes }
        return try bytesValue("SELECT bytes FROM \(t.records) WHERE kind = $1 AND owner = $2 AND id = $3",
                              binds { $0.append(Int16(kind.rawValue)); $0.append(Self.text(user)); $0.append(Self.text(id)) },
                              doing: "read a record")
    }

    func recordCount(_ kind: RecordKind) throws -> Int {
        guard let row = try qAll("SELECT count(*) FROM \(t.records) WHERE kind = $1", binds { $0.append(Int16(kind.rawValue)) },
                                 doing: "count records").first else { return 0 }
        return Int(try decode(row, Int64.self, doing: "count records"))
    }

    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        if let hash = layered({ $0.treeHash(index) }) { return try hash.withUnsafeBytes { try body($0) } }
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

    // MARK: StorageWriter

    func putEvent(seq: UInt64, id: EventID, stream: String, version: UInt64, bytes: [UInt8]) throws {
        try write { $0.putEvent(.init(seq: seq, id: id, stream: stream, version: version, bytes: bytes)) }
    }

    /// Moves the head; the statement also notifies the other servers (see `PostgresPendingWrites`).
    func setHead(_ head: Head) throws {
        try write { $0.setHead(head) }
        knownHead = head
    }

    func putProjectionState(_ key: String, _ bytes: [UInt8]) throws {
        try write { $0.putState(key, bytes) }
    }

    func clearProjectionStates() throws {
        try send("DELETE FROM \(t.states)", doing: "clear the projections")
    }

    func putRecord(_ kind: RecordKind, user: String, id: String, _ bytes: [UInt8]) throws {
        try write { $0.putRecord(.init(kind: Int16(kind.rawValue), owner: kind.owner(user), id: id), bytes) }
    }

    func clearRecords() throws {
        try send("DELETE FROM \(t.records)", doing: "clear the records")
    }

    func setCheckpoint(_ seq: UInt64) throws {
        try putMetaValue("checkpoint", seq.bigEndianBytes)
    }

    func putMetaValue(_ key: String, _ bytes: [UInt8]?) throws {
        try write { $0.putMeta(key, bytes) }
    }

    func putPersonalValues(user: String, seq: UInt64, _ bytes: [UInt8]) throws {
        try write { $0.putPersonal(seq: seq, owner: user, bytes) }
    }

    func erasePersonalValues(user: String, before: UInt64) throws -> [UInt64] {
        let rows = try qAll("DELETE FROM \(t.personal) WHERE owner = $1 AND seq < $2 RETURNING seq",
                            binds { $0.append(Self.text(user)); $0.append(Self.int(before)) }, doing: "erase personal values")
        return try rows.map { UInt64(bitPattern: try decode($0, Int64.self, doing: "erase personal values")) }.sorted()
    }

    func appendTreeHash(_ index: UInt64, _ hash: UnsafeRawBufferPointer) throws {
        try write { $0.putTree(index, Array(hash)) }
    }

    func clearTree() throws {
        try send("DELETE FROM \(t.tree)", doing: "clear the tree")
    }

    /// One request of a commit group (see the type's comment): deferred, its writes are a
    /// layer that joins the group's when it passes and is dropped when it is refused;
    /// strict, a SAVEPOINT whose statements are all answered before it is released.
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        if requestPending != nil { return try nestedSavepoint(body) }
        let headBefore = knownHead
        savepoints += 1
        requestPending = PostgresPendingWrites()
        savepointOpen = false
        defer {
            savepoints -= 1
            requestPending = nil
            savepointOpen = false
        }
        let result: T
        do {
            if !deferred { try openSavepoint() }
            result = try body()
            if savepointOpen {
                try sendPending(&requestPending!)
                // Strict: a refused statement is this request's (its failure rolls back below).
                if !deferred { try drain() }
                inFlight.append((s.send("RELEASE SAVEPOINT \(savepointName)", PostgresBindings()), "release savepoint"))
            } else {
                pending.merge(requestPending!)
                if pending.rowCount >= Self.sendEarly { try sendPending(&pending) }
            }
        } catch {
            requestPending = PostgresPendingWrites()
            knownHead = headBefore
            if savepointOpen { try rollbackToSavepoint() }
            throw error
        }
        return result
    }

    /// Rolls the current savepoint back: every statement in flight was sent after it.
    private func rollbackToSavepoint() throws {
        _ = try? drain()
        do {
            _ = try s.query("ROLLBACK TO SAVEPOINT \(savepointName)", doing: "rollback to savepoint")
        } catch let e as PostgresFailure {
            throw PostgresFailure(spoiling: e)
        }
    }

    /// A savepoint inside a request's: always a real one, after everything before it was sent and answered.
    private func nestedSavepoint<T>(_ body: () throws -> T) throws -> T {
        try sendAll()
        try drain()
        savepoints += 1
        defer { savepoints -= 1 }
        inFlight.append((s.send("SAVEPOINT \(savepointName)", PostgresBindings()), "savepoint"))
        let result: T
        let headBefore = knownHead
        do {
            result = try body()
            try sendPending(&requestPending!)
            try drain()
        } catch {
            requestPending = PostgresPendingWrites()
            knownHead = headBefore
            try rollbackToSavepoint()
            throw error
        }
        inFlight.append((s.send("RELEASE SAVEPOINT \(savepointName)", PostgresBindings()), "release savepoint"))
        return result
    }
}
