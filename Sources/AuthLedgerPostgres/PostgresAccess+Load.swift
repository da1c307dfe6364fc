import AuthLedger
import AuthLedgerCore
import Foundation
import NIOCore
import PostgresNIO

/// Reads by the group, not by the event (see `PostgresAccess`): what a transaction read is
/// kept (values and absences), a commit group's states, records and ids are loaded before
/// it runs in one statement per kind (`unnest($1)`, `load`), and the Merkle tree's frontier
/// with them, or not at all when the previous transaction of this process left it at the
/// head it locked (`PostgresStorage+CatchUp.swift`).
///
/// What the transaction writes goes to the layers first, which reads look in before these;
/// a layer that is sent updates them (`remember`), and a rollback to a savepoint or a
/// clear forgets them (`forgetReads`): they never answer with what PostgreSQL no longer holds.
struct PostgresReadCache {
    var states: [String: [UInt8]?] = [:]
    var records: [PostgresPendingWrites.RecordKey: [UInt8]?] = [:]
    var ids: [EventID: UInt64?] = [:]
    var meta: [String: [UInt8]?] = [:]
    /// Personal values of the events found by id (by seq; nil: none).
    var personal: [UInt64: [UInt8]?] = [:]
    /// Events read with an erasure's records or a found id (stored events never change).
    var events: [UInt64: [UInt8]] = [:]
    /// The stored personal values of users a group erases (`StorageLoad.erased`), in seq order.
    var personalOf: [String: [(seq: UInt64, bytes: [UInt8])]] = [:]
    /// The owners whose every challenge and OTP record is in `records` (an erased user's):
    /// one of those not there is absent.
    var recordsOf: Set<String> = []
    /// Tree hashes known to be stored (the frontier, read ahead or cached).
    var tree: [UInt64: [UInt8]] = [:]

    /// What a sent layer wrote is what PostgreSQL now holds in this transaction: the keys
    /// known here take their new values (keys not known here were not loaded, and a read of
    /// one is refused as `unloaded`; a large import does not copy its rows here).
    mutating func remember(_ layer: PostgresPendingWrites) {
        if !ids.isEmpty { for e in layer.events where ids[e.id] != nil { ids[e.id] = .some(e.seq) } }
        for (k, v) in layer.states where states[k] != nil { states[k] = .some(v) }
        for (k, v) in layer.records where records[k] != nil || recordsOf.contains(k.owner) { records[k] = .some(v) }
        for (k, v) in layer.meta where meta[k] != nil { meta[k] = .some(v) }
        if !personal.isEmpty { for p in layer.personal where personal[p.seq] != nil { personal[p.seq] = .some(p.bytes) } }
        guard !personalOf.isEmpty else { return }
        // An erased user's values, as the layer's statements leave them (its rows, then its erasures).
        for p in layer.personal where personalOf[p.owner] != nil {
            personalOf[p.owner]!.append((p.seq, p.bytes))
            if let bytes = layer.event(seq: p.seq) { events[p.seq] = bytes }
        }
        for (owner, before) in layer.erasures where personalOf[owner] != nil { personalOf[owner]!.removeAll { $0.seq < before } }
    }
}

extension PostgresAccess {
    /// Forgets every value read (a rollback to a savepoint, a clear or an erasure changed what is stored).
    func forgetReads() {
        cache = PostgresReadCache()
        frontierFetched = false
    }

    /// The stored indexes of the Merkle tree's frontier for `size` leaves (`TreeFrontier.load`'s reads).
    static func frontierIndexes(_ size: UInt64) -> [UInt64] {
        var out: [UInt64] = []
        var start: UInt64 = 0
        for level in stride(from: 63, through: 0, by: -1) where size & (UInt64(1) << UInt64(level)) != 0 {
            out.append(MerkleTree.storedHashIndex(level: level, start >> UInt64(level)))
            start += UInt64(1) << UInt64(level)
        }
        return out
    }

    /// The statement reading the hashes of the locked head's frontier that the cache does
    /// not hold; nil when it holds them all.
    func frontierStatement() -> PostgresStatement? {
        var wanted = startHead.map { Self.frontierIndexes($0.seq) } ?? []
        wanted = wanted.filter { cache.tree[$0] == nil }
        guard !wanted.isEmpty else { return nil }
        return PostgresStatement("""
            SELECT i, substring(t.hashes FROM (i % \(PostgresTiles.width) * 32 + 1)::int FOR 32) FROM unnest($1::int8[]) AS i
            JOIN \(t.tiles) t ON t.tile = i / \(PostgresTiles.width) WHERE length(t.hashes) >= (i % \(PostgresTiles.width) + 1) * 32
            """, doing: "read the tree's frontier") { $0.append(wanted.map { Self.int($0) }) }
    }

    /// Keeps the hashes `frontierStatement` answered.
    func applyFrontier(_ rows: [PostgresRow]) throws {
        frontierFetched = true
        for row in rows {
            let (i, hash) = try decode2(row, Int64.self, ByteBuffer.self, doing: "read the tree's frontier")
            cache.tree[UInt64(bitPattern: i)] = Array(hash.readableBytesView)
        }
    }

    /// A commit group's load step (`PostgresStorage.writeGroup`): the projection states,
    /// records, event ids (with the events found and their personal values), meta values and
    /// erased users' values and records the group will ask for and the cache does not know
    /// (absences kept too), and for a group that appends the Merkle tree's frontier at the
    /// locked head, read in one statement per kind sent together and awaited: one round trip.
    func load(_ wanted: StorageLoad) async throws {
        let ahead = PostgresAhead(
            states: Array(Set(wanted.states)).filter { cache.states[$0] == nil },
            records: Array(Set(wanted.records.map { PostgresPendingWrites.RecordKey(kind: Int16($0.kind.rawValue), owner: $0.kind.owner($0.user), id: $0.id) }))
                .filter { cache.records[$0] == nil },
            ids: Array(Set(wanted.ids)).filter { cache.ids[$0] == nil },
            meta: Array(Set(wanted.meta)).filter { cache.meta[$0] == nil },
            erased: Array(Set(wanted.erased)).filter { cache.personalOf[$0] == nil })
        let reads = statements(ahead)
        let frontier = wanted.appends && !frontierFetched ? frontierStatement() : nil
        if frontier == nil && wanted.appends { frontierFetched = true }
        let all = reads + (frontier.map { [$0] } ?? [])
        guard !all.isEmpty else { return }
        let sent = all.map { s.send($0.sql, $0.binds) }
        roundTrips?.add(1)
        let answers = try await EventLoopFuture.whenAllComplete(sent, on: s.connection.eventLoop).get()
        try apply(ahead, Array(answers.prefix(reads.count)))
        if let frontier {
            try settle([answers[reads.count]], [frontier.doing])
            try applyFrontier(Array(try answers[reads.count].get().rows))
        }
    }

    /// The statements reading `ahead` (each answers the positions, 1-based, of the keys it found, with their values).
    func statements(_ ahead: PostgresAhead) -> [PostgresStatement] {
        var out: [PostgresStatement] = []
        if !ahead.states.isEmpty { out.append(t.states(ahead.states)) }
        if !ahead.records.isEmpty { out.append(t.records(ahead.records)) }
        if !ahead.ids.isEmpty {
            // (A found id is a duplicate's: its event and values are compared with the input.)
            out.append(PostgresStatement("""
                SELECT k.n, e.seq, e.bytes, p.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(id, n)
                JOIN \(t.events) e ON e.id = k.id LEFT JOIN \(t.personal) p ON p.seq = e.seq
                """, binds { $0.append(ahead.ids.map { Self.bytes($0.bytes) }) }, doing: "find event ids"))
        }
        if !ahead.meta.isEmpty { out.append(t.metaValues(ahead.meta)) }
        if !ahead.erased.isEmpty {
            out.append(PostgresStatement("""
                SELECT k.n, p.seq, p.bytes, e.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(owner, n)
                JOIN \(t.personal) p ON p.owner = k.owner LEFT JOIN \(t.events) e ON e.seq = p.seq ORDER BY p.seq
                """, binds { $0.append(ahead.erased.map { Self.text($0) }) }, doing: "read personal values to erase"))
            out.append(PostgresStatement("""
                SELECT k.n, r.kind, r.id, r.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(owner, n)
                JOIN \(t.records) r ON r.owner = k.owner AND r.kind IN (\(RecordKind.challenge.rawValue), \(RecordKind.otp.rawValue))
                """, binds { $0.append(ahead.erased.map { Self.text($0) }) }, doing: "read an erased user's records"))
        }
        return out
    }

    /// Keeps what `statements(ahead)` answered (`results`, in their order), absences too.
    func apply(_ ahead: PostgresAhead, _ results: [Result<PostgresQueryResult, any Error>]) throws {
        let doing = statements(ahead).map(\.doing)
        try settle(results, doing)
        func keyed<K>(_ keys: [K], doing: String, _ keep: (K, [UInt8]?) -> Void) throws {
            for (key, value) in zip(keys, try PostgresRows.keyed(try results[k].get().rows, count: keys.count, doing: doing)) { keep(key, value) }
            k += 1
        }
        var k = 0
        if !ahead.states.isEmpty { try keyed(ahead.states, doing: "read projections") { cache.states[$0] = .some($1) } }
        if !ahead.records.isEmpty { try keyed(ahead.records, doing: "read records") { cache.records[$0] = .some($1) } }
        if !ahead.ids.isEmpty {
            for id in ahead.ids { cache.ids[id] = .some(nil) }
            for row in try results[k].get().rows {
                let (n, seq, event, personal): (Int64, Int64, ByteBuffer, ByteBuffer?)
                do { (n, seq, event, personal) = try row.decode((Int64, Int64, ByteBuffer, ByteBuffer?).self) } catch { throw Self.unexpected("find event ids") }
                let at = UInt64(bitPattern: seq)
                cache.ids[ahead.ids[Int(n) - 1]] = .some(at)
                cache.events[at] = Array(event.readableBytesView)
                cache.personal[at] = .some(personal.map { Array($0.readableBytesView) })
            }
            k += 1
        }
        if !ahead.meta.isEmpty { try keyed(ahead.meta, doing: "read meta values") { cache.meta[$0] = .some($1) } }
        if !ahead.erased.isEmpty {
            for user in ahead.erased { cache.personalOf[user] = [] }
            for row in try results[k].get().rows {
                let (n, seq, values, event): (Int64, Int64, ByteBuffer, ByteBuffer?)
                do { (n, seq, values, event) = try row.decode((Int64, Int64, ByteBuffer, ByteBuffer?).self) } catch {
                    throw Self.unexpected("read personal values to erase")
                }
                let at = UInt64(bitPattern: seq)
                cache.personalOf[ahead.erased[Int(n) - 1]]!.append((at, Array(values.readableBytesView)))
                if let event { cache.events[at] = Array(event.readableBytesView) }
            }
            for row in try results[k + 1].get().rows {
                let (n, kind, id, bytes): (Int64, Int16, ByteBuffer, ByteBuffer)
                do { (n, kind, id, bytes) = try row.decode((Int64, Int16, ByteBuffer, ByteBuffer).self) } catch {
                    throw Self.unexpected("read an erased user's records")
                }
                let key = PostgresPendingWrites.RecordKey(kind: kind, owner: ahead.erased[Int(n) - 1],
                                                          id: String(decoding: id.readableBytesView, as: UTF8.self))
                cache.records[key] = .some(Array(bytes.readableBytesView))
            }
            cache.recordsOf.formUnion(ahead.erased)
        }
    }
}

extension PostgresAccess {
    static func unexpected(_ doing: String) -> LedgerError { LedgerError(.tampered, "unexpected value in the PostgreSQL store (\(doing))") }
}

/// What a group loads and the cache does not know (see `PostgresAccess.load`).
struct PostgresAhead {
    var states: [String]
    var records: [PostgresPendingWrites.RecordKey]
    var ids: [EventID]
    var meta: [String]
    var erased: [String]
}
