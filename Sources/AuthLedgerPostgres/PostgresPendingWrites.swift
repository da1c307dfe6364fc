import AuthLedgerCore
import NIOCore
import PostgresNIO

/// Writes of a PostgreSQL write transaction kept in memory until they are sent (see
/// `PostgresAccess`): a commit group's requests write here, and only the writes of
/// requests that passed every check of the rules go to PostgreSQL, as one call of the
/// schema's `append_group` with one array per column — so a group costs one statement,
/// not a few per event, and a refused request costs none. Reads of the transaction look here
/// before what the group loaded (`event(seq:)`, `seq(id:)`, …), so a request sees what the
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

    /// A keyed table's rows, in the order their keys were first written.
    struct Keyed<K: Hashable, V> {
        private(set) var values: [K: V] = [:]
        private(set) var order: [K] = []
        subscript(key: K) -> V? { values[key] }
        mutating func put(_ key: K, _ value: V) { if values.updateValue(value, forKey: key) == nil { order.append(key) } }
        mutating func merge(_ later: Keyed) { for k in later.order { put(k, later.values[k]!) } }
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
    private var eventByStream: [String: [UInt64: Int]] = [:]
    private(set) var tree: [(index: UInt64, hash: [UInt8])] = []
    private var treeByIndex: [UInt64: Int] = [:]
    private(set) var personal: [(seq: UInt64, owner: String, bytes: [UInt8])] = []
    private var personalBySeq: [UInt64: Int] = [:]
    var states = Keyed<String, [UInt8]>()
    var records = Keyed<RecordKey, [UInt8]>()
    /// nil: delete the key.
    var meta = Keyed<String, [UInt8]?>()
    private(set) var head: Head?
    /// Erasures of personal values (owner → the seq before which its values go), sent
    /// after the rows (`erasePersonal`).
    private(set) var erasures: [String: UInt64] = [:]

    /// Rows waiting (a group sends them early past a threshold, to keep PostgreSQL busy
    /// while the writer encodes the next events).
    var rowCount: Int { events.count + tree.count + personal.count + states.order.count + records.order.count + meta.order.count }
    var isEmpty: Bool { rowCount == 0 && head == nil && erasures.isEmpty }

    // MARK: Writes

    mutating func putEvent(_ row: EventRow) {
        let k = events.count
        events.append(row)
        eventBySeq[row.seq] = k
        eventById[row.id] = k
        eventByStream[row.stream, default: [:]][row.version] = k
    }

    mutating func putTree(_ index: UInt64, _ hash: [UInt8]) {
        treeByIndex[index] = tree.count
        tree.append((index, hash))
    }

    mutating func putPersonal(seq: UInt64, owner: String, _ bytes: [UInt8]) {
        personalBySeq[seq] = personal.count
        personal.append((seq, owner, bytes))
    }

    mutating func setHead(_ h: Head) { head = h }

    /// Erases `owner`'s personal values before `before`: the rows of this layer at once
    /// (their seqs returned), the stored ones by a DELETE sent after the rows.
    mutating func erasePersonal(owner: String, before: UInt64) -> [UInt64] {
        erasures[owner] = max(erasures[owner] ?? 0, before)
        let gone = personal.filter { $0.owner == owner && $0.seq < before }
        guard !gone.isEmpty else { return [] }
        personal.removeAll { $0.owner == owner && $0.seq < before }
        personalBySeq = Dictionary(uniqueKeysWithValues: personal.enumerated().map { ($1.seq, $0) })
        return gone.map(\.seq)
    }

    /// Adds `later`'s writes after these (a request that passed joins its group).
    mutating func merge(_ later: PostgresPendingWrites) {
        for e in later.events { putEvent(e) }
        for t in later.tree { putTree(t.index, t.hash) }
        for p in later.personal { putPersonal(seq: p.seq, owner: p.owner, p.bytes) }
        states.merge(later.states)
        records.merge(later.records)
        meta.merge(later.meta)
        if let h = later.head { head = h }
        for (owner, before) in later.erasures { _ = erasePersonal(owner: owner, before: before) }
    }

    // MARK: Reads (nil: not written here, ask the next layer)

    func event(seq: UInt64) -> [UInt8]? { eventBySeq[seq].map { events[$0].bytes } }
    func seq(id: EventID) -> UInt64? { eventById[id].map { events[$0].seq } }
    func seq(stream: String, version: UInt64) -> UInt64? { eventByStream[stream]?[version].map { events[$0].seq } }
    func treeHash(_ index: UInt64) -> [UInt8]? { treeByIndex[index].map { tree[$0].hash } }
    func personalValues(seq: UInt64) -> [UInt8]? { personalBySeq[seq].map { personal[$0].bytes } }
    /// Whether `owner`'s values at `seq` were erased here (stored ones are deleted when this is sent).
    func erased(owner: String, seq: UInt64) -> Bool { erasures[owner].map { seq < $0 } ?? false }

    // MARK: Statements

    /// The statements that write all of this: one call of `append_group` (`PostgresSchema`,
    /// version 2) with one array per column, each table's rows in their order — so a group
    /// costs one statement and one round trip, whatever its number of rows and tables — and
    /// a DELETE per erasure (rare: an erasure's own transaction).
    func statements(_ t: PostgresTables, instance: String) -> [PostgresStatement] {
        let erase = erasures.sorted(by: { $0.key < $1.key }).map { owner, before in
            PostgresStatement("DELETE FROM \(t.personal) WHERE owner = $1 AND seq < $2", doing: "erase personal values") {
                $0.append(ByteBuffer(string: owner)); $0.append(PostgresLoaded.key(before))
            }
        }
        return (rowCount > 0 || head != nil ? [groupStatement(t, instance: instance)] : []) + erase
    }

    /// The tree hashes as runs of consecutive indexes inside one tile each: the first
    /// index and the hashes one after the other (what `append_group` appends to a tile).
    var treeChunks: [(first: UInt64, hashes: [UInt8])] {
        var out: [(first: UInt64, hashes: [UInt8])] = []
        for (index, hash) in tree {
            if let last = out.last, last.first + UInt64(last.hashes.count / 32) == index, index % PostgresTiles.width != 0 {
                out[out.count - 1].hashes += hash
            } else {
                out.append((index, hash))
            }
        }
        return out
    }

    /// The call of `append_group` with this layer's rows.
    private func groupStatement(_ t: PostgresTables, instance: String) -> PostgresStatement {
        PostgresStatement("""
            SELECT \(t.schema).append_group($1::int8[], $2::bytea[], $3::bytea[], $4::int8[], $5::bytea[],
                $6::int8[], $7::bytea[], $8::int8[], $9::bytea[], $10::bytea[], $11::bytea[], $12::bytea[],
                $13::int2[], $14::bytea[], $15::bytea[], $16::bytea[], $17::bytea[], $18::bytea[], $19::bytea[],
                $20::int8, $21::bytea, $22::text, $23::text)
            """, doing: "store the group") { b in
            b.append(events.map { Int64(bitPattern: $0.seq) })
            b.append(events.map { ByteBuffer(bytes: $0.id.bytes) })
            b.append(events.map { ByteBuffer(string: $0.stream) })
            b.append(events.map { Int64(bitPattern: $0.version) })
            b.append(events.map { ByteBuffer(bytes: $0.bytes) })
            let chunks = treeChunks
            b.append(chunks.map { Int64(bitPattern: $0.first) })
            b.append(chunks.map { ByteBuffer(bytes: $0.hashes) })
            b.append(personal.map { Int64(bitPattern: $0.seq) })
            b.append(personal.map { ByteBuffer(string: $0.owner) })
            b.append(personal.map { ByteBuffer(bytes: $0.bytes) })
            b.append(states.order.map { ByteBuffer(string: $0) })
            b.append(states.order.map { ByteBuffer(bytes: states[$0]!) })
            b.append(records.order.map(\.kind))
            b.append(records.order.map { ByteBuffer(string: $0.owner) })
            b.append(records.order.map { ByteBuffer(string: $0.id) })
            b.append(records.order.map { ByteBuffer(bytes: records[$0]!) })
            let puts = meta.order.filter { meta[$0]! != nil }
            b.append(puts.map { ByteBuffer(string: $0) })
            b.append(puts.map { ByteBuffer(bytes: meta[$0]!!) })
            b.append(meta.order.filter { meta[$0]! == nil }.map { ByteBuffer(string: $0) })
            if let head {
                // The head moves and the other servers are notified (delivered at COMMIT; see
                // `PostgresCommitListener`) in the same statement.
                b.append(Int64(bitPattern: head.seq)); b.append(ByteBuffer(bytes: head.hash.bytes))
                b.append(t.schema); b.append("\(head.seq) \(head.hash) \(instance)")
            } else {
                b.appendNull(); b.appendNull(); b.appendNull(); b.appendNull()
            }
        }
    }
}

extension PostgresPendingWrites.RecordKey {
    /// The key of `user`'s `kind` record `id` (stored under `RecordKind.owner`).
    init(_ kind: RecordKind, user: String, id: String) { self.init(kind: Int16(kind.rawValue), owner: kind.owner(user), id: id) }
}
