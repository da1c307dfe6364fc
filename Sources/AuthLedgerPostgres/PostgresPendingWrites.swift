import AuthLedgerCore
import NIOCore
import PostgresNIO

/// Writes of a PostgreSQL write transaction kept in memory until they are sent (see
/// `PostgresAccess`): a commit group's requests write here, and only the writes of
/// requests that passed every check of the rules go to PostgreSQL, each table's rows as
/// one statement over arrays (`unnest`) — so a group costs a few statements, not a few
/// per event, and a refused request costs none. Reads of the transaction look here
/// before they ask PostgreSQL (`event(seq:)`, `seq(id:)`, …), so a request sees what the
/// requests before it in the group wrote, and what it wrote itself.
///
/// Keyed tables keep one row per key (the last write wins, as statement by statement):
/// PostgreSQL refuses to update a row twice in one upsert.
struct PostgresPendingWrites {
    struct RecordKey: Hashable {
        let kind: Int16
        let owner: String
        let id: String
    }

    struct StreamVersion: Hashable {
        let stream: String
        let version: UInt64
    }

    struct EventRow {
        let seq: UInt64
        let id: EventID
        let stream: String
        let version: UInt64
        let bytes: [UInt8]
    }

    private(set) var events: [EventRow] = []
    private var eventBySeq: [UInt64: Int] = [:]
    private var eventById: [EventID: Int] = [:]
    private var eventByStream: [StreamVersion: Int] = [:]
    private(set) var tree: [(index: UInt64, hash: [UInt8])] = []
    private var treeByIndex: [UInt64: Int] = [:]
    private(set) var personal: [(seq: UInt64, owner: String, bytes: [UInt8])] = []
    private var personalBySeq: [UInt64: Int] = [:]
    private(set) var states: [String: [UInt8]] = [:]
    private(set) var stateOrder: [String] = []
    private(set) var records: [RecordKey: [UInt8]] = [:]
    private(set) var recordOrder: [RecordKey] = []
    /// nil: delete the key.
    private(set) var meta: [String: [UInt8]?] = [:]
    private(set) var metaOrder: [String] = []
    private(set) var head: Head?

    /// Rows waiting (a group sends them early past a threshold, to keep PostgreSQL busy
    /// while the writer encodes the next events).
    var rowCount: Int { events.count + tree.count + personal.count + stateOrder.count + recordOrder.count + metaOrder.count }
    var isEmpty: Bool { rowCount == 0 && head == nil }

    // MARK: Writes

    mutating func putEvent(_ row: EventRow) {
        let k = events.count
        events.append(row)
        eventBySeq[row.seq] = k
        eventById[row.id] = k
        eventByStream[StreamVersion(stream: row.stream, version: row.version)] = k
    }

    mutating func putTree(_ index: UInt64, _ hash: [UInt8]) {
        treeByIndex[index] = tree.count
        tree.append((index, hash))
    }

    mutating func putPersonal(seq: UInt64, owner: String, _ bytes: [UInt8]) {
        personalBySeq[seq] = personal.count
        personal.append((seq, owner, bytes))
    }

    mutating func putState(_ key: String, _ bytes: [UInt8]) {
        if states.updateValue(bytes, forKey: key) == nil { stateOrder.append(key) }
    }

    mutating func putRecord(_ key: RecordKey, _ bytes: [UInt8]) {
        if records.updateValue(bytes, forKey: key) == nil { recordOrder.append(key) }
    }

    mutating func putMeta(_ key: String, _ bytes: [UInt8]?) {
        if meta.updateValue(bytes, forKey: key) == nil { metaOrder.append(key) }
    }

    mutating func setHead(_ h: Head) { head = h }

    /// Adds `later`'s writes after these (a request that passed joins its group).
    mutating func merge(_ later: PostgresPendingWrites) {
        for e in later.events { putEvent(e) }
        for t in later.tree { putTree(t.index, t.hash) }
        for p in later.personal { putPersonal(seq: p.seq, owner: p.owner, p.bytes) }
        for k in later.stateOrder { putState(k, later.states[k]!) }
        for k in later.recordOrder { putRecord(k, later.records[k]!) }
        for k in later.metaOrder { putMeta(k, later.meta[k]!) }
        if let h = later.head { head = h }
    }

    // MARK: Reads (nil: not written here, ask the next layer)

    func event(seq: UInt64) -> [UInt8]? { eventBySeq[seq].map { events[$0].bytes } }
    func seq(id: EventID) -> UInt64? { eventById[id].map { events[$0].seq } }
    func seq(stream: String, version: UInt64) -> UInt64? {
        eventByStream[StreamVersion(stream: stream, version: version)].map { events[$0].seq }
    }
    func treeHash(_ index: UInt64) -> [UInt8]? { treeByIndex[index].map { tree[$0].hash } }
    func personalValues(seq: UInt64) -> [UInt8]? { personalBySeq[seq].map { personal[$0].bytes } }
    func state(_ key: String) -> [UInt8]? { states[key] }
    func record(_ key: RecordKey) -> [UInt8]? { records[key] }
    /// `.some(nil)`: deleted here.
    func metaValue(_ key: String) -> [UInt8]?? { meta[key] }

    // MARK: Statements

    /// The statements that write all of this, in an order that keeps every table's own
    /// order (each table is one statement) — one `unnest` over arrays per table, so the
    /// statement text is the same whatever the number of rows.
    func statements(_ t: PostgresTables, instance: String) -> [(sql: String, binds: PostgresBindings, doing: String)] {
        var out: [(String, PostgresBindings, String)] = []
        if !events.isEmpty {
            var b = PostgresBindings(capacity: 5)
            b.append(events.map { Int64(bitPattern: $0.seq) })
            b.append(events.map { ByteBuffer(bytes: $0.id.bytes) })
            b.append(events.map { ByteBuffer(string: $0.stream) })
            b.append(events.map { Int64(bitPattern: $0.version) })
            b.append(events.map { ByteBuffer(bytes: $0.bytes) })
            out.append(("INSERT INTO \(t.events) (seq, id, stream, version, bytes) SELECT * FROM unnest($1::int8[], $2::bytea[], $3::bytea[], $4::int8[], $5::bytea[])",
                        b, "store events"))
        }
        if !tree.isEmpty {
            var b = PostgresBindings(capacity: 2)
            b.append(tree.map { Int64(bitPattern: $0.index) })
            b.append(tree.map { ByteBuffer(bytes: $0.hash) })
            out.append(("INSERT INTO \(t.tree) (idx, hash) SELECT * FROM unnest($1::int8[], $2::bytea[])", b, "store tree hashes"))
        }
        if !personal.isEmpty {
            var b = PostgresBindings(capacity: 3)
            b.append(personal.map { Int64(bitPattern: $0.seq) })
            b.append(personal.map { ByteBuffer(string: $0.owner) })
            b.append(personal.map { ByteBuffer(bytes: $0.bytes) })
            out.append(("INSERT INTO \(t.personal) (seq, owner, bytes) SELECT * FROM unnest($1::int8[], $2::bytea[], $3::bytea[])",
                        b, "store personal values"))
        }
        if !stateOrder.isEmpty {
            var b = PostgresBindings(capacity: 2)
            b.append(stateOrder.map { ByteBuffer(string: $0) })
            b.append(stateOrder.map { ByteBuffer(bytes: states[$0]!) })
            out.append(("""
                INSERT INTO \(t.states) (key, bytes) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                ON CONFLICT (key) DO UPDATE SET bytes = EXCLUDED.bytes
                """, b, "store projections"))
        }
        if !recordOrder.isEmpty {
            var b = PostgresBindings(capacity: 4)
            b.append(recordOrder.map(\.kind))
            b.append(recordOrder.map { ByteBuffer(string: $0.owner) })
            b.append(recordOrder.map { ByteBuffer(string: $0.id) })
            b.append(recordOrder.map { ByteBuffer(bytes: records[$0]!) })
            out.append(("""
                INSERT INTO \(t.records) (kind, owner, id, bytes) SELECT * FROM unnest($1::int2[], $2::bytea[], $3::bytea[], $4::bytea[])
                ON CONFLICT (kind, owner, id) DO UPDATE SET bytes = EXCLUDED.bytes
                """, b, "store records"))
        }
        let puts = metaOrder.filter { meta[$0]! != nil }
        let deletes = metaOrder.filter { meta[$0]! == nil }
        if !puts.isEmpty {
            var b = PostgresBindings(capacity: 2)
            b.append(puts.map { ByteBuffer(string: $0) })
            b.append(puts.map { ByteBuffer(bytes: meta[$0]!!) })
            out.append(("""
                INSERT INTO \(t.meta) (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
                """, b, "store meta values"))
        }
        if !deletes.isEmpty {
            var b = PostgresBindings(capacity: 1)
            b.append(deletes.map { ByteBuffer(string: $0) })
            out.append(("DELETE FROM \(t.meta) WHERE key = ANY($1::bytea[])", b, "delete meta values"))
        }
        if let head {
            // Moves the head and, in the same statement, notifies the other servers
            // (delivered at COMMIT; see `PostgresCommitListener`).
            var b = PostgresBindings(capacity: 4)
            b.append(Int64(bitPattern: head.seq)); b.append(ByteBuffer(bytes: head.hash.bytes))
            b.append(t.schema); b.append("\(head.seq) \(head.hash) \(instance)")
            out.append(("""
                WITH moved AS (UPDATE \(t.head) SET seq = $1, hash = $2 RETURNING seq)
                SELECT pg_notify($3, $4) FROM moved
                """, b, "advance the head"))
        }
        return out
    }
}
