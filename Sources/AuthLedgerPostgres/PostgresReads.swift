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

/// The read statements of the store, each in one place: the synchronous reader
/// (`PostgresAccess+Reader.swift`) and the async reads' fills (`PostgresSnapshot+Fill.swift`)
/// both send these and decode their rows with `PostgresRows`.
extension PostgresTables {
    var headRow: PostgresStatement { PostgresStatement("SELECT seq, hash FROM \(head)", doing: "read the head") }

    /// Events from `seq` on, with their personal values: `(seq, bytes, personal bytes or NULL)`.
    func logPage(from seq: Int64, limit: Int) -> PostgresStatement {
        PostgresStatement("""
            SELECT e.seq, e.bytes, p.bytes FROM \(events) e LEFT JOIN \(personal) p ON p.seq = e.seq
            WHERE e.seq >= $1 ORDER BY e.seq LIMIT \(limit)
            """, doing: "scan the log") { $0.append(seq) }
    }

    /// `(version, seq)` of `stream` from `version` on.
    func streamPage(_ stream: String, from version: Int64, limit: Int) -> PostgresStatement {
        PostgresStatement("SELECT version, seq FROM \(events) WHERE stream = $1 AND version >= $2 ORDER BY version LIMIT \(limit)",
                          doing: "scan a stream") { $0.append(PostgresAccess.text(stream)); $0.append(version) }
    }

    func streamVersion(_ stream: String, _ version: UInt64) -> PostgresStatement {
        PostgresStatement("SELECT seq FROM \(events) WHERE stream = $1 AND version = $2", doing: "find a stream version") {
            $0.append(PostgresAccess.text(stream)); $0.append(PostgresAccess.int(version))
        }
    }

    /// `(version, seq, bytes, personal bytes or NULL)` of `stream` from `version` on: a
    /// stream's index and its events in one statement (an async read's fill).
    func streamEventsPage(_ stream: String, from version: Int64, limit: Int) -> PostgresStatement {
        PostgresStatement("""
            SELECT e.version, e.seq, e.bytes, p.bytes FROM \(events) e LEFT JOIN \(personal) p ON p.seq = e.seq
            WHERE e.stream = $1 AND e.version >= $2 ORDER BY e.version LIMIT \(limit)
            """, doing: "scan a stream") { $0.append(PostgresAccess.text(stream)); $0.append(version) }
    }

    /// `(idx, hash)` of the Merkle tree from `index` on.
    func treePage(from index: Int64, limit: Int) -> PostgresStatement {
        PostgresStatement("SELECT idx, hash FROM \(tree) WHERE idx >= $1 ORDER BY idx LIMIT \(limit)",
                          doing: "scan the tree") { $0.append(index) }
    }

    /// `column` of the row of `table` whose `key` is `value`.
    private func point<V: PostgresNonThrowingEncodable>(_ column: String, of table: String, where key: String, is value: V,
                                                        doing: String) -> PostgresStatement {
        PostgresStatement("SELECT \(column) FROM \(table) WHERE \(key) = $1", doing: doing) { $0.append(value) }
    }

    func treeHash(_ index: UInt64) -> PostgresStatement {
        point("hash", of: tree, where: "idx", is: PostgresAccess.int(index), doing: "read a tree hash")
    }

    func event(_ seq: UInt64) -> PostgresStatement { point("bytes", of: events, where: "seq", is: PostgresAccess.int(seq), doing: "read an event") }

    func seq(forId id: EventID) -> PostgresStatement {
        point("seq", of: events, where: "id", is: PostgresAccess.bytes(id.bytes), doing: "find an event id")
    }

    func state(_ key: String) -> PostgresStatement { point("bytes", of: states, where: "key", is: PostgresAccess.text(key), doing: "read a projection") }

    /// `(key, bytes)` of the projection states after `key` (from the first without one).
    func statesPage(after key: ByteBuffer?, limit: Int) -> PostgresStatement {
        guard let key else {
            return PostgresStatement("SELECT key, bytes FROM \(states) ORDER BY key LIMIT \(limit)", doing: "scan the projections")
        }
        return PostgresStatement("SELECT key, bytes FROM \(states) WHERE key > $1 ORDER BY key LIMIT \(limit)",
                                 doing: "scan the projections") { $0.append(key) }
    }

    func metaValue(_ key: String) -> PostgresStatement {
        point("value", of: meta, where: "key", is: PostgresAccess.text(key), doing: "read a meta value")
    }

    func personalValues(_ seq: UInt64) -> PostgresStatement {
        point("bytes", of: personal, where: "seq", is: PostgresAccess.int(seq), doing: "read personal values")
    }

    /// `(seq, bytes)` of every personal-values record of `user`.
    func personalValues(of user: String) -> PostgresStatement {
        PostgresStatement("SELECT seq, bytes FROM \(personal) WHERE owner = $1 ORDER BY seq",
                          doing: "scan personal values") { $0.append(PostgresAccess.text(user)) }
    }

    /// `(seq, event bytes)` of `user`'s personal-values records before `seq`: what an
    /// erasure destroys, with the events it reads next (`erasePersonalValues`).
    func personalErasure(of user: String, before seq: UInt64) -> PostgresStatement {
        PostgresStatement("""
            SELECT p.seq, e.bytes FROM \(personal) p LEFT JOIN \(events) e ON e.seq = p.seq
            WHERE p.owner = $1 AND p.seq < $2 ORDER BY p.seq
            """, doing: "find personal values to erase") {
            $0.append(PostgresAccess.text(user)); $0.append(Int64(bitPattern: min(seq, UInt64(Int64.max))))
        }
    }

    func record(_ key: PostgresPendingWrites.RecordKey) -> PostgresStatement {
        PostgresStatement("SELECT bytes FROM \(records) WHERE kind = $1 AND owner = $2 AND id = $3", doing: "read a record") {
            $0.append(key.kind); $0.append(PostgresAccess.text(key.owner)); $0.append(PostgresAccess.text(key.id))
        }
    }

    func recordCount(_ kind: Int16) -> PostgresStatement {
        PostgresStatement("SELECT count(*) FROM \(records) WHERE kind = $1", doing: "count records") { $0.append(kind) }
    }

    var eventCount: PostgresStatement { PostgresStatement("SELECT count(*) FROM \(events)", doing: "count the events") }
    var treeCount: PostgresStatement { PostgresStatement("SELECT count(*) FROM \(tree)", doing: "count the tree hashes") }
}

/// The decoding of the statements' rows (a value PostgreSQL should not hold is `tampered`).
enum PostgresRows {
    static func decode<T: PostgresDecodable>(_ row: PostgresRow, _ type: T.Type, doing: String) throws -> T {
        do { return try row.decode(T.self) } catch { throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (\(doing))") }
    }

    static func decode2<A: PostgresDecodable, B: PostgresDecodable>(_ row: PostgresRow, _ a: A.Type, _ b: B.Type, doing: String) throws -> (A, B) {
        do { return try row.decode((A, B).self) } catch { throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (\(doing))") }
    }

    /// The first row's one bytes column, or nil when there is no row.
    static func bytes(_ rows: [PostgresRow], doing: String) throws -> [UInt8]? {
        guard let row = rows.first else { return nil }
        return Array(try decode(row, ByteBuffer.self, doing: doing).readableBytesView)
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

    /// A `(seq, bytes, personal)` row of `logPage`.
    static func logRow(_ row: PostgresRow) throws -> (UInt64, ByteBuffer, [UInt8]?) {
        let (k, buffer, personal): (Int64, ByteBuffer, ByteBuffer?)
        do { (k, buffer, personal) = try row.decode((Int64, ByteBuffer, ByteBuffer?).self) } catch {
            throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (scan the log)")
        }
        return (UInt64(bitPattern: k), buffer, personal.map { Array($0.readableBytesView) })
    }
}
