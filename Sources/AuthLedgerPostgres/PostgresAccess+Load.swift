import AuthLedger
import NIOCore
import PostgresNIO

/// A commit group's load step (`PostgresStorage.writeGroup`): what the group will read and
/// its cache (`PostgresLoaded`) does not know, loaded before it runs, absences too, in one
/// round trip — the projection states, records and meta values as a query loads them
/// (`PostgresLoaded.statements`), the event ids it looks up (with the events found and their
/// personal values), the erased users' values and records, and for a group that appends
/// the Merkle tree's frontier at the locked head, unless the previous transaction of this
/// process left it there (`PostgresStorage+CatchUp.swift`).
///
/// What the transaction writes goes to the layers first, which reads look in before the
/// cache; a layer that is sent updates it (`remember`), and a rollback to a savepoint or a
/// clear forgets it (`forgetReads`): it never answers with what PostgreSQL no longer holds.
extension PostgresAccess {
    func load(_ wanted: StorageLoad) async throws {
        var read = ReadLoad(states: wanted.states, meta: wanted.meta)
        read.records = wanted.records
        var reads = cache.statements(read, t)
        let ids = Array(Set(wanted.ids)).filter { cache.ids[$0] == nil }
        if !ids.isEmpty { reads.append(find(ids)) }
        let erased = Array(Set(wanted.erased)).filter { cache.personalOf[$0] == nil }
        if !erased.isEmpty { reads += erasedValues(erased) }
        if wanted.appends && !cache.frontier {
            if let frontier = frontier() { reads.append(frontier) } else { cache.frontier = true }
        }
        guard !reads.isEmpty else { return }
        roundTrips?.add(1)
        do { try await s.load(reads) } catch let e as PostgresFailure { throw e.inGroup }
    }

    /// The stored events of `ids`, with their personal values (a found id is a duplicate's:
    /// its event and values are compared with the input).
    private func find(_ ids: [EventID]) -> PostgresRead {
        let st = PostgresStatement("""
            SELECT k.n, e.seq, e.bytes, p.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(id, n)
            JOIN \(t.events) e ON e.id = k.id LEFT JOIN \(t.personal) p ON p.seq = e.seq
            """, doing: "find event ids") { $0.append(ids.map { Self.bytes($0.bytes) }) }
        return (st, { [cache] rows in
            for id in ids { cache.ids[id] = .some(nil) }
            for (n, seq, event, personal) in try PostgresRows.decode(rows, (Int64, Int64, ByteBuffer, ByteBuffer?).self, doing: st.doing) {
                let at = UInt64(bitPattern: seq)
                cache.ids[ids[Int(n) - 1]] = .some(at)
                cache.log.rows[at] = Array(event.readableBytesView)
                cache.personal[at] = .some(personal.map { Array($0.readableBytesView) })
            }
        })
    }

    /// Every stored personal value of `users` (with its event, which the erasure reads next)
    /// and their challenge and OTP records.
    private func erasedValues(_ users: [String]) -> [PostgresRead] {
        let values = PostgresStatement("""
            SELECT k.n, p.seq, p.bytes, e.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(owner, n)
            JOIN \(t.personal) p ON p.owner = k.owner LEFT JOIN \(t.events) e ON e.seq = p.seq ORDER BY p.seq
            """, doing: "read personal values to erase") { $0.append(users.map { Self.text($0) }) }
        let records = PostgresStatement("""
            SELECT k.n, r.kind, r.id, r.bytes FROM unnest($1::bytea[]) WITH ORDINALITY AS k(owner, n)
            JOIN \(t.records) r ON r.owner = k.owner AND r.kind IN (\(RecordKind.challenge.rawValue), \(RecordKind.otp.rawValue))
            """, doing: "read an erased user's records") { $0.append(users.map { Self.text($0) }) }
        return [(values, { [cache] rows in
            for user in users { cache.personalOf[user] = [] }
            for (n, seq, bytes, event) in try PostgresRows.decode(rows, (Int64, Int64, ByteBuffer, ByteBuffer?).self, doing: values.doing) {
                let at = UInt64(bitPattern: seq)
                cache.personalOf[users[Int(n) - 1]]!.append((at, Array(bytes.readableBytesView)))
                if let event { cache.log.rows[at] = Array(event.readableBytesView) }
            }
        }), (records, { [cache] rows in
            for (n, kind, id, bytes) in try PostgresRows.decode(rows, (Int64, Int16, ByteBuffer, ByteBuffer).self, doing: records.doing) {
                let key = PostgresPendingWrites.RecordKey(kind: kind, owner: users[Int(n) - 1],
                                                          id: String(decoding: id.readableBytesView, as: UTF8.self))
                cache.records[key] = .some(Array(bytes.readableBytesView))
            }
        })]
    }

    /// The hashes of the locked head's frontier (`TreeFrontier.load`'s reads) the cache does
    /// not hold; nil when it holds them all.
    private func frontier() -> PostgresRead? {
        let wanted = (startHead.map { Self.frontierIndexes($0.seq) } ?? []).filter { cache.tree.rows[$0] == nil }
        guard !wanted.isEmpty else { return nil }
        let st = PostgresStatement("""
            SELECT i, substring(t.hashes FROM (i % \(PostgresTiles.width) * 32 + 1)::int FOR 32) FROM unnest($1::int8[]) AS i
            JOIN \(t.tiles) t ON t.tile = i / \(PostgresTiles.width) WHERE length(t.hashes) >= (i % \(PostgresTiles.width) + 1) * 32
            """, doing: "read the tree's frontier") { $0.append(wanted.map { Self.int($0) }) }
        return (st, { [cache] rows in
            cache.frontier = true
            for (i, hash) in try PostgresRows.decode(rows, (Int64, ByteBuffer).self, doing: st.doing) {
                cache.tree.rows[UInt64(bitPattern: i)] = Array(hash.readableBytesView)
            }
        })
    }

    /// The stored indexes of the Merkle tree's frontier for `size` leaves.
    static func frontierIndexes(_ size: UInt64) -> [UInt64] {
        var out: [UInt64] = []
        var start: UInt64 = 0
        for level in stride(from: 63, through: 0, by: -1) where size & (UInt64(1) << UInt64(level)) != 0 {
            out.append(MerkleTree.storedHashIndex(level: level, start >> UInt64(level)))
            start += UInt64(1) << UInt64(level)
        }
        return out
    }

    /// Forgets every value read (a clear changed what is stored).
    func forgetReads() {
        cache = PostgresLoaded(misses: cache.misses)
    }
}

extension PostgresLoaded {
    /// What a sent layer wrote is what PostgreSQL now holds in this transaction: the keys
    /// known here take their new values (keys not known here were not loaded, and a read of
    /// one is refused; a large import does not copy its rows here).
    func remember(_ layer: PostgresPendingWrites) {
        if !ids.isEmpty { for e in layer.events where ids[e.id] != nil { ids[e.id] = .some(e.seq) } }
        for (k, v) in layer.states.values where states[k] != nil { states[k] = .some(v) }
        for (k, v) in layer.records.values where records[k] != nil || personalOf[k.owner] != nil { records[k] = .some(v) }
        for (k, v) in layer.meta.values where meta[k] != nil { meta[k] = .some(v) }
        if !personal.isEmpty { for p in layer.personal where personal[p.seq] != nil { personal[p.seq] = .some(p.bytes) } }
        guard !personalOf.isEmpty else { return }
        // An erased user's values, as the layer's statements leave them (its rows, then its erasures).
        for p in layer.personal where personalOf[p.owner] != nil {
            personalOf[p.owner]!.append((p.seq, p.bytes))
            if let bytes = layer.event(seq: p.seq) { log.rows[p.seq] = bytes }
        }
        for (owner, before) in layer.erasures where personalOf[owner] != nil { personalOf[owner]!.removeAll { $0.seq < before } }
    }

    /// A copy of what a write group keeps (a rollback to a savepoint restores it).
    func copy() -> PostgresLoaded {
        let c = PostgresLoaded(misses: misses)
        (c.log, c.personal, c.tree, c.states, c.meta, c.records) = (log, personal, tree, states, meta, records)
        (c.ids, c.personalOf, c.frontier) = (ids, personalOf, frontier)
        return c
    }
}
