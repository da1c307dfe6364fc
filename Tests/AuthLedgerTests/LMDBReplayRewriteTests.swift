import AuthLedger
import AuthLedgerLMDB
import Foundation
import LMDB
import Testing

/// Replay on LMDB writes the projection states and records as a difference with what the
/// store holds (layout 3 keeps them beside the stream index): an intact store's entries
/// stay byte for byte, and whatever was added, removed or changed behind the ledger's back
/// is put back exactly as the log gives it.
@Suite struct LMDBReplayRewriteTests {
    /// Every scenario of Fixtures/scenarios in one store (states, challenges, OTPs, grants, links).
    static func store() throws -> (Ledger, String) {
        let path = Support.tempDir("replay-rewrite")
        let ledger = try Ledger(lmdb: path)
        let dir = Support.fixture("scenarios")
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        where name.hasSuffix(".jsonl") && !name.hasSuffix(".expect.jsonl") {
            try ledger.importText(try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8))
        }
        return (ledger, path)
    }

    /// Every entry of `streams`, by key.
    static func streams(_ path: String) throws -> [[UInt8]: [UInt8]] {
        let env = try Environment(path: path)
        let streams = try env.database("streams")
        return try env.read { txn in
            var all: [[UInt8]: [UInt8]] = [:]
            let c = try txn.cursor(streams)
            var entry = try c.first()
            while let (k, v) = entry {
                all[Array(k)] = Array(v)
                entry = try c.next()
            }
            return all
        }
    }

    static func edit(_ path: String, _ body: (Transaction, Database) throws -> Void) throws {
        let env = try Environment(path: path)
        let streams = try env.database("streams")
        try env.write { txn in try body(txn, streams) }
    }

    @Test func replayPutsBackExactlyWhatTheLogGives() throws {
        let (ledger, path) = try Self.store()
        let before = try Self.streams(path)
        let state = try #require(before.keys.first { $0.count > 9 && $0.suffix(8).allSatisfy { $0 == 0xFF } })
        let record = try #require(before.keys.first { k in k.firstIndex(of: 0).map { $0 + 1 < k.count && k[$0 + 1] == 0xFE } == true })
        #expect(before.count > 40)
        // An intact store: the same entries after a replay
        try ledger.replayBlocking()
        let after = try Self.streams(path)
        let differing = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }
            .map { k in String(decoding: k.map { $0 < 32 || $0 > 126 ? UInt8(46) : $0 }, as: UTF8.self) }
        #expect(differing.isEmpty, "entries a replay of an intact store rewrote: \(differing.sorted())")
        // When a state is changed, a record removed, and a stray state and record added
        let ghost = Array("ghost".utf8) + [0]
        try Self.edit(path) { txn, streams in
            try txn.put(streams, state, [0x01, 0x02])
            _ = try txn.delete(streams, record)
            try txn.put(streams, ghost + [UInt8](repeating: 0xFF, count: 8), [0x03])
            try txn.put(streams, ghost + [0xFE, 1] + Array("c-ghost".utf8), [0x04])
        }
        #expect(try Self.streams(path) != before)
        // Then replay puts back exactly the entries the log gives, and the store verifies
        let reopened = try Ledger(lmdb: path)
        try reopened.replayBlocking()
        #expect(try Self.streams(path) == before)
        _ = try reopened.verify()
    }
}
