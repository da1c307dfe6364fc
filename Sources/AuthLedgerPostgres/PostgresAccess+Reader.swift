import AuthLedgerCore
import Foundation
import NIOCore
import PostgresNIO

/// The reads of a PostgreSQL transaction (see `PostgresAccess`).
extension PostgresAccess {
    func head() throws -> Head {
        if let h = knownHead { return h }
        guard let row = try q(t.headRow).first else { return .empty }
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
        if let bytes = layered({ $0.event(seq: seq) }) ?? cache.events[seq] { return try bytes.withUnsafeBytes { try body($0) } }
        guard let bytes = try bytesValue(t.event(seq)) else { return try body(nil) }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    func seq(forId id: EventID) throws -> UInt64? {
        if let seq = layered({ $0.seq(id: id) }) { return seq }
        if let known = cache.ids[id] { return known }
        let st = t.seq(forId: id)
        let seq = try PostgresRows.integer(q(st), doing: st.doing)
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
            let rows = try q(t.logPage(from: next, limit: page))
            var decoded: [(UInt64, ByteBuffer)] = []
            decoded.reserveCapacity(rows.count)
            cache.personal.removeAll(keepingCapacity: true)
            for row in rows {
                let (k, buffer, personal) = try PostgresRows.logRow(row)
                cache.personal[k] = .some(personal)
                decoded.append((k, buffer))
            }
            for (k, buffer) in decoded {
                if try !buffer.withUnsafeReadableBytes({ try body(k, $0) }) { return }
                next = Int64(bitPattern: k) + 1
            }
            if rows.count < page { return }
            page = min(page * 2, Self.scanPage)
        }
    }

    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try scanStream(stream, fromVersion: 0, body)
    }

    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try sendAll()
        var next = Int64(bitPattern: min(version, UInt64(Int64.max)))
        while true {
            let rows = try q(t.streamPage(stream, from: next, limit: Self.page))
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
        let st = t.streamVersion(stream, version)
        return try PostgresRows.integer(q(st), doing: st.doing)
    }

    func projectionState(_ key: String) throws -> [UInt8]? {
        // After `clearProjectionStates`: only the states put since.
        if let states = replacing.states { return states[key] }
        if let bytes = layered({ $0.state(key) }) { return bytes }
        if let known = cache.states[key] { return known }
        let bytes = try bytesValue(t.state(key))
        cache.states[key] = .some(bytes)
        return bytes
    }

    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        try sendAll()
        var after: ByteBuffer? = nil
        while true {
            let rows = try q(t.statesPage(after: after, limit: Self.page))
            for row in rows {
                let (key, buffer) = try decode2(row, ByteBuffer.self, ByteBuffer.self, doing: "scan the projections")
                let name = String(decoding: key.readableBytesView, as: UTF8.self)
                if try !buffer.withUnsafeReadableBytes({ try body(name, $0) }) { return }
                after = key
            }
            if rows.count < Self.page { return }
        }
    }

    /// Pages that grow from 64 rows: a page of users reads one.
    func scanProjectionStates(from: String, _ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        try sendAll()
        var key = Self.text(from), inclusive = true, page = 64
        while true {
            let st = t.statesFrom(key, inclusive: inclusive, limit: page)
            let rows = try q(st)
            for row in rows {
                let (k, bytes, _) = try PostgresRows.stateFromRow(row, doing: st.doing)
                if try !bytes.withUnsafeReadableBytes({ try body(String(decoding: k.readableBytesView, as: UTF8.self), $0) }) { return }
                (key, inclusive) = (k, false)
            }
            if rows.count < page { return }
            page = min(page * 2, Self.scanPage)
        }
    }

    func checkpoint() throws -> UInt64 { PostgresRows.checkpoint(try metaValue("checkpoint")) }

    func metaValue(_ key: String) throws -> [UInt8]? {
        if let value = layered({ $0.metaValue(key) }) { return value }
        if let known = cache.meta[key] { return known }
        let value = try bytesValue(t.metaValue(key))
        cache.meta[key] = .some(value)
        return value
    }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) {
        // The id and stream indexes are unique indexes of the events table: one entry per row.
        let n = try count(t.eventCount)
        return (n, n, n)
    }

    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        if requestPending?.erased(owner: user, seq: seq) == true || pending.erased(owner: user, seq: seq) { return nil }
        if let bytes = layered({ $0.personalValues(seq: seq) }) { return bytes }
        if let known = cache.personal[seq] { return known }
        // An erased user's, loaded with the group (every stored value of the user's).
        if let stored = cache.personalOf[user] { return stored.first { $0.seq == seq }?.bytes }
        return try bytesValue(t.personalValues(seq))
    }

    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        if let stored = cache.personalOf[user] {
            // An erased user's, loaded with the group: the stored rows and the layers' own.
            var rows = stored.filter { !pending.erased(owner: user, seq: $0.seq) && requestPending?.erased(owner: user, seq: $0.seq) != true }
            for layer in [pending, requestPending].compactMap({ $0 }) { rows += layer.personal.filter { $0.owner == user }.map { ($0.seq, $0.bytes) } }
            for row in rows.sorted(by: { $0.seq < $1.seq }) where try !row.bytes.withUnsafeBytes({ try body(row.seq, $0) }) { return }
            return
        }
        let rows = try qAll(t.personalValues(of: user))
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
        if cache.recordsOf.contains(key.owner) && (kind == .challenge || kind == .otp) { return nil }
        let bytes = try bytesValue(t.record(key))
        cache.records[key] = .some(bytes)
        return bytes
    }

    func recordCount(_ kind: RecordKind) throws -> Int {
        try count(t.recordCount(Int16(kind.rawValue)))
    }

    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        if let hash = layered({ $0.treeHash(index) }) { return try hash.withUnsafeBytes { try body($0) } }
        // A write's first miss reads the whole frontier of the locked head at once.
        if cache.tree[index] == nil && startHead != nil && !frontierFetched { try fetchFrontier(also: index) }
        if let hash = cache.tree[index] { return try hash.withUnsafeBytes { try body($0) } }
        // The last tile read answers for its hashes (a check reads them one after the other,
        // a proof its neighbours): one round trip per tile, not per hash. Stored hashes
        // never change (a clear forgets every read), and a tile read before this
        // transaction appended to it is only shorter (read again).
        let range = PostgresTiles.tile(of: index)
        let at = Int(index - range.lowerBound) * 32
        if cache.tile?.range != range || cache.tile!.hashes.count < at + 32 {
            let st = t.tiles(covering: range)
            var hashes = [UInt8]()
            try PostgresRows.forEachTreeHash(try q(st), in: range, doing: st.doing) { _, h in hashes.append(contentsOf: h) }
            cache.tile = (range, hashes)
        }
        guard let tile = cache.tile, at + 32 <= tile.hashes.count else { return try body(nil) }
        return try tile.hashes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[at..<(at + 32)])) }
    }

    func treeHashCount() throws -> UInt64 {
        UInt64(try count(t.treeCount))
    }

    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        try sendAll()
        // Pages of 2,048 hashes, 8 tiles (a page that ends short, at the last one or at a gap, ends the scan).
        var next = min(from, UInt64(Int64.max))
        let page = UInt64(Self.page * 4)
        while true {
            let range = next..<(next + page)
            let st = t.tiles(covering: range)
            var stopped = false, n: UInt64 = 0
            try PostgresRows.forEachTreeHash(try q(st), in: range, doing: st.doing) { index, hash in
                if stopped { return }
                n += 1
                if try !body(index, hash) { stopped = true }
            }
            if stopped || n < page { return }
            next += page
        }
    }
}
