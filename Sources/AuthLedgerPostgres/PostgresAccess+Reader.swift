import AuthLedgerCore
import Foundation
import NIOCore
import PostgresNIO

/// The reads of a write transaction (see `PostgresAccess`): answered from what it wrote
/// (its layers) and what its load step read (`PostgresAccess+Load.swift`); anything else is
/// a programming error, refused as the request's failure (`unloaded`), never a round trip.
extension PostgresAccess {
    func head() throws -> Head { knownHead ?? .empty }

    static func decodeHead(_ row: PostgresRow) throws -> Head {
        let seq: Int64, hash: ByteBuffer
        do { (seq, hash) = try row.decode((Int64, ByteBuffer).self) } catch {
            throw LedgerError(.tampered, "unexpected value in the PostgreSQL store (read the head)")
        }
        guard hash.readableBytes == 32 else { throw LedgerError(.tampered, "malformed head") }
        return Head(seq: UInt64(bitPattern: seq), hash: Hash32(bytes: Array(hash.readableBytesView)))
    }

    func withEventBytes<T>(_ seq: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        guard let bytes = layered({ $0.event(seq: seq) }) ?? cache.events[seq] else { throw unloaded("read event \(seq)") }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    func seq(forId id: EventID) throws -> UInt64? {
        if let seq = layered({ $0.seq(id: id) }) { return seq }
        guard let known = cache.ids[id] else { throw unloaded("look up an event id") }
        return known
    }

    func scan(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        throw unloaded("scan the log")
    }

    func scanStream(_ stream: String, _ body: (UInt64, UInt64) throws -> Bool) throws {
        throw unloaded("scan a stream")
    }

    func scanStream(_ stream: String, fromVersion version: UInt64, _ body: (UInt64, UInt64) throws -> Bool) throws {
        throw unloaded("scan a stream")
    }

    func seq(stream: String, version: UInt64) throws -> UInt64? {
        guard let seq = layered({ $0.seq(stream: stream, version: version) }) else { throw unloaded("read a stream entry") }
        return seq
    }

    func projectionState(_ key: String) throws -> [UInt8]? {
        // After `clearProjectionStates`: only the states put since.
        if let states = replacing.states { return states[key] }
        if let bytes = layered({ $0.state(key) }) { return bytes }
        guard let known = cache.states[key] else { throw unloaded("read a projection") }
        return known
    }

    func scanProjectionStates(_ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        throw unloaded("scan the projections")
    }

    func scanProjectionStates(from: String, _ body: (String, UnsafeRawBufferPointer) throws -> Bool) throws {
        throw unloaded("scan the projections")
    }

    func checkpoint() throws -> UInt64 { PostgresRows.checkpoint(try metaValue("checkpoint")) }

    func metaValue(_ key: String) throws -> [UInt8]? {
        if let value = layered({ $0.metaValue(key) }) { return value }
        guard let known = cache.meta[key] else { throw unloaded("read a meta value") }
        return known
    }

    func indexCounts() throws -> (events: Int, ids: Int, streams: Int) {
        throw unloaded("count the events")
    }

    func personalValues(user: String, seq: UInt64) throws -> [UInt8]? {
        if requestPending?.erased(owner: user, seq: seq) == true || pending.erased(owner: user, seq: seq) { return nil }
        if let bytes = layered({ $0.personalValues(seq: seq) }) { return bytes }
        if let known = cache.personal[seq] { return known }
        // An erased user's, loaded with the group (every stored value of the user's).
        guard let stored = cache.personalOf[user] else { throw unloaded("read personal values") }
        return stored.first { $0.seq == seq }?.bytes
    }

    func scanPersonalValues(user: String, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        // An erased user's, loaded with the group: the stored rows and the layers' own.
        guard let stored = cache.personalOf[user] else { throw unloaded("scan personal values") }
        var rows = stored.filter { !pending.erased(owner: user, seq: $0.seq) && requestPending?.erased(owner: user, seq: $0.seq) != true }
        for layer in [pending, requestPending].compactMap({ $0 }) { rows += layer.personal.filter { $0.owner == user }.map { ($0.seq, $0.bytes) } }
        for row in rows.sorted(by: { $0.seq < $1.seq }) where try !row.bytes.withUnsafeBytes({ try body(row.seq, $0) }) { return }
    }

    func record(_ kind: RecordKind, user: String, id: String) throws -> [UInt8]? {
        let user = kind.owner(user)
        let key = PostgresPendingWrites.RecordKey(kind: Int16(kind.rawValue), owner: user, id: id)
        if let bytes = layered({ $0.record(key) }) { return bytes }
        if let known = cache.records[key] { return known }
        if cache.recordsOf.contains(key.owner) && (kind == .challenge || kind == .otp) { return nil }
        throw unloaded("read a record")
    }

    func recordCount(_ kind: RecordKind) throws -> Int {
        throw unloaded("count the records")
    }

    /// The hashes this transaction wrote and the locked head's frontier (the load step of a
    /// group that appends reads it, or it came from the process's cache).
    func withTreeHash<T>(_ index: UInt64, _ body: (UnsafeRawBufferPointer?) throws -> T) throws -> T {
        if let hash = layered({ $0.treeHash(index) }) ?? cache.tree[index] { return try hash.withUnsafeBytes { try body($0) } }
        throw unloaded("read a tree hash")
    }

    func treeHashCount() throws -> UInt64 {
        throw unloaded("count the tree hashes")
    }

    func scanTree(from: UInt64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Bool) throws {
        throw unloaded("scan the tree")
    }
}
