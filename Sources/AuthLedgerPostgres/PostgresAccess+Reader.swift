import AuthLedgerCore
import NIOCore
import PostgresNIO

/// The reads of a write transaction (see `PostgresAccess`): answered from what it wrote
/// (its layers), then from what its load step read (`cache`); anything else is a
/// programming error, refused as the request's failure (`PostgresLoaded.notLoaded`), never
/// a round trip.
extension PostgresAccess {
    func head() throws -> Head { knownHead ?? .empty }

    func withEventBytes<T>(_ seq: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        guard let bytes = layered({ $0.event(seq: seq) }) else { return try cache.withEventBytes(seq, body) }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    func seq(forId id: EventID) throws -> UInt64? { try layered { $0.seq(id: id) } ?? cache.seq(forId: id) }

    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws { try cache.scan(from: from, body) }

    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws { try cache.scanStream(stream, body) }

    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        try cache.scanStream(stream, fromVersion: version, body)
    }

    func seq(stream: String, version: UInt64) throws -> UInt64? {
        try layered { $0.seq(stream: stream, version: version) } ?? cache.seq(stream: stream, version: version)
    }

    func projectionState(_ key: String) throws -> [UInt8]? {
        // After `clearProjectionStates`: only the states put since.
        if let states = replacing.states { return states[key] }
        return try layered { $0.states[key] } ?? cache.projectionState(key)
    }

    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws { try cache.scanProjectionStates(body) }

    func scanProjectionStates(from: String, _ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        try cache.scanProjectionStates(from: from, body)
    }

    func checkpoint() throws -> UInt64 { PostgresRows.checkpoint(try metaValue("checkpoint")) }

    func metaValue(_ key: String) throws -> [UInt8]? { try layered { $0.meta[key] } ?? cache.metaValue(key) }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) { try cache.indexCounts() }

    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        if requestPending?.erased(owner: user, seq: seq) == true || pending.erased(owner: user, seq: seq) { return nil }
        return try layered { $0.personalValues(seq: seq) } ?? cache.personalValues(user: user, seq: seq)
    }

    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        // An erased user's, loaded with the group: the stored rows and the layers' own.
        guard let stored = cache.personalOf[user] else { throw cache.notLoaded("the personal values of \(user)") }
        var rows = stored.filter { !pending.erased(owner: user, seq: $0.seq) && requestPending?.erased(owner: user, seq: $0.seq) != true }
        for layer in [pending, requestPending].compactMap({ $0 }) { rows += layer.personal.filter { $0.owner == user }.map { ($0.seq, $0.bytes) } }
        for row in rows.sorted(by: { $0.seq < $1.seq }) where try !row.bytes.withUnsafeBytes({ try body(row.seq, $0) }) { return }
    }

    func record(_ kind: RecordKind, user: String, id: String) throws -> [UInt8]? {
        try layered { $0.records[.init(kind, user: user, id: id)] } ?? cache.record(kind, user: user, id: id)
    }

    func recordCount(_ kind: RecordKind) throws -> Int { try cache.recordCount(kind) }

    /// The hashes this transaction wrote and the locked head's frontier (the load step of a
    /// group that appends reads it, or it came from the process's cache).
    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        guard let hash = layered({ $0.treeHash(index) }) else { return try cache.withTreeHash(index, body) }
        return try hash.withUnsafeBytes { try body($0) }
    }

    func treeHashCount() throws -> UInt64 { try cache.treeHashCount() }

    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws { try cache.scanTree(from: from, body) }
}
