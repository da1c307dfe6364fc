import AuthLedger
import AuthLedgerCore
import Foundation
import NIOCore
import PostgresNIO

/// Reads by the group, not by the event (see `PostgresAccess`): what a transaction read is
/// kept (values and absences), a commit group's states, records and ids are read ahead in
/// one statement per kind (`= ANY($1)`, `prefetch`), and the Merkle tree's frontier is read
/// in one statement, or not at all when the previous transaction of this process left it
/// at the head it locked (`PostgresStorage.frontier`).
///
/// What the transaction writes goes to the layers first, which reads look in before these;
/// a layer that is sent updates them (`remember`), and a rollback to a savepoint or a
/// clear forgets them (`forgetReads`): they never answer with what PostgreSQL no longer holds.
struct PostgresReadCache {
    var states: [String: [UInt8]?] = [:]
    var records: [PostgresPendingWrites.RecordKey: [UInt8]?] = [:]
    var ids: [EventID: UInt64?] = [:]
    var meta: [String: [UInt8]?] = [:]
    /// Personal values of the rows of the current scan page (by seq; nil: none).
    var personal: [UInt64: [UInt8]?] = [:]
    /// Events read with an erasure's records (stored events never change).
    var events: [UInt64: [UInt8]] = [:]
    /// The hashes of the tile read last (`withTreeHash`), from its first on.
    var tile: (range: Range<UInt64>, hashes: [UInt8])?
    /// Tree hashes known to be stored (the frontier, read ahead or cached).
    var tree: [UInt64: [UInt8]] = [:]

    /// What a sent layer wrote is what PostgreSQL now holds in this transaction: the keys
    /// known here take their new values (keys not known here are read from PostgreSQL,
    /// which answers with what was sent; a large import does not copy its rows here).
    mutating func remember(_ layer: PostgresPendingWrites) {
        if !ids.isEmpty { for e in layer.events where ids[e.id] != nil { ids[e.id] = .some(e.seq) } }
        for (k, v) in layer.states where states[k] != nil { states[k] = .some(v) }
        for (k, v) in layer.records where records[k] != nil { records[k] = .some(v) }
        for (k, v) in layer.meta where meta[k] != nil { meta[k] = .some(v) }
        if !personal.isEmpty { for p in layer.personal where personal[p.seq] != nil { personal[p.seq] = .some(p.bytes) } }
    }
}

extension PostgresAccess {
    /// The streams appended to since `head` (which this process committed), when caught up from it.
    func streamsChanged(since head: Head) throws -> Set<String>? {
        guard let c = changedSince, c.head == head else { return nil }
        return c.streams
    }

    /// Forgets every value read (a rollback to a savepoint, a clear or an erasure changed what is stored).
    func forgetReads() {
        cache = PostgresReadCache()
        frontierFetched = false
        // (Wait-free with nothing sent, the answers fetched are still what the transaction sees.)
        if run.sent { run.answers = [:] }
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

    /// Reads the frontier of the locked head and `index` in one statement (a write
    /// transaction's first tree read that the cache cannot answer).
    func fetchFrontier(also index: UInt64) throws {
        // All stored by earlier transactions: nothing unsent is needed (and nothing is sent,
        // so a request's deferred writes stay deferred).
        var wanted = startHead.map { Self.frontierIndexes($0.seq) } ?? []
        wanted.append(index)
        wanted = wanted.filter { cache.tree[$0] == nil }
        guard !wanted.isEmpty else { frontierFetched = true; return }
        // (Fetched once read: a wait-free run's miss here leaves the next request of the
        // run asking for the frontier again, the same statement, not hash by hash.)
        let rows = try q("""
            SELECT i, substring(t.hashes FROM (i % \(PostgresTiles.width) * 32 + 1)::int FOR 32) FROM unnest($1::int8[]) AS i
            JOIN \(t.tiles) t ON t.tile = i / \(PostgresTiles.width) WHERE length(t.hashes) >= (i % \(PostgresTiles.width) + 1) * 32
            """, binds { $0.append(wanted.map { Self.int($0) }) }, doing: "read the tree's frontier")
        frontierFetched = true
        for row in rows {
            let (i, hash) = try decode2(row, Int64.self, ByteBuffer.self, doing: "read the tree's frontier")
            cache.tree[UInt64(bitPattern: i)] = Array(hash.readableBytesView)
        }
    }

    /// Every point read is a round trip: a group's reads are made ahead, at once.
    var readsAhead: Bool { true }

    /// Reads ahead, in one statement per kind sent together (one round trip), the
    /// projection states, records and event ids a group will ask for and that neither the
    /// layers nor the cache know; absences are kept too. Wait-free, what is to be read is
    /// a miss (`PostgresAccess+WaitFree.swift`), fetched before the body runs again.
    func prefetch(states keys: [String], records wanted: [(RecordKind, String, String)], ids: [EventID]) throws {
        let ahead = PostgresAhead(
            states: Array(Set(keys)).filter { k in cache.states[k] == nil && layered({ $0.state(k) }) == nil },
            records: Array(Set(wanted.map { PostgresPendingWrites.RecordKey(kind: Int16($0.0.rawValue), owner: $0.0.owner($0.1), id: $0.2) }))
                .filter { k in cache.records[k] == nil && layered({ $0.record(k) }) == nil },
            ids: Array(Set(ids)).filter { id in cache.ids[id] == nil && layered({ $0.seq(id: id) }) == nil })
        guard !ahead.isEmpty else { return }
        if waitFree { throw missed(.ahead(ahead)) }
        // What was sent is answered first (its failure is reported, not the aborted
        // transaction's); nothing unsent is needed: the layers answer for their keys.
        try drain()
        let sent = statements(ahead).map { s.send($0.sql, $0.binds) }
        try apply(ahead, try s.answer(EventLoopFuture.whenAllComplete(sent, on: s.connection.eventLoop)))
    }

    /// The statements reading `ahead` (each answers the positions, 1-based, of the keys it found, with their values).
    func statements(_ ahead: PostgresAhead) -> [PostgresStatement] {
        var out: [PostgresStatement] = []
        if !ahead.states.isEmpty {
            out.append(PostgresStatement("""
                SELECT k.n, s.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(key, n) JOIN \(t.states) s ON s.key = k.key
                """, binds { $0.append(ahead.states.map { Self.text($0) }) }, doing: "read projections"))
        }
        if !ahead.records.isEmpty {
            out.append(PostgresStatement("""
                SELECT k.n, r.bytes FROM unnest($1::int2[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS k(kind, owner, id, n)
                JOIN \(t.records) r ON r.kind = k.kind AND r.owner = k.owner AND r.id = k.id
                """, binds {
                    $0.append(ahead.records.map(\.kind)); $0.append(ahead.records.map { Self.text($0.owner) })
                    $0.append(ahead.records.map { Self.text($0.id) })
                }, doing: "read records"))
        }
        if !ahead.ids.isEmpty {
            out.append(PostgresStatement("""
                SELECT k.n, e.seq FROM unnest($1::bytea[]) WITH ORDINALITY AS k(id, n) JOIN \(t.events) e ON e.id = k.id
                """, binds { $0.append(ahead.ids.map { Self.bytes($0.bytes) }) }, doing: "find event ids"))
        }
        return out
    }

    /// Keeps what `statements(ahead)` answered (`results`, in their order), absences too.
    func apply(_ ahead: PostgresAhead, _ results: [Result<PostgresQueryResult, any Error>]) throws {
        let doing = statements(ahead).map(\.doing)
        try settle(results, doing)
        func found<V: PostgresDecodable>(_ r: Result<PostgresQueryResult, any Error>, _ type: V.Type, doing: String, _ each: (Int, V) -> Void) throws {
            for row in try r.get().rows {
                let (n, v) = try decode2(row, Int64.self, V.self, doing: doing)
                each(Int(n) - 1, v)
            }
        }
        var k = 0
        if !ahead.states.isEmpty {
            for key in ahead.states { cache.states[key] = .some(nil) }
            try found(results[k], ByteBuffer.self, doing: "read projections") { cache.states[ahead.states[$0]] = .some(Array($1.readableBytesView)) }
            k += 1
        }
        if !ahead.records.isEmpty {
            for key in ahead.records { cache.records[key] = .some(nil) }
            try found(results[k], ByteBuffer.self, doing: "read records") { cache.records[ahead.records[$0]] = .some(Array($1.readableBytesView)) }
            k += 1
        }
        if !ahead.ids.isEmpty {
            for id in ahead.ids { cache.ids[id] = .some(nil) }
            try found(results[k], Int64.self, doing: "find event ids") { cache.ids[ahead.ids[$0]] = .some(UInt64(bitPattern: $1)) }
        }
    }
}

/// What a group reads ahead and the cache does not know (see `PostgresAccess.prefetch`).
struct PostgresAhead {
    var states: [String]
    var records: [PostgresPendingWrites.RecordKey]
    var ids: [EventID]
    var isEmpty: Bool { states.isEmpty && records.isEmpty && ids.isEmpty }
}
