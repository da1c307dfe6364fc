@testable import AuthLedger
@testable import AuthLedgerCore
import AuthLedgerPostgres
import AuthLedgerTestSupport
import Foundation
import Testing

/// The PostgreSQL replay's one scan (#25, `Ledger+ReplayOnce.swift`): the log read once in
/// runs and handed to every partition and to the tree check rebuilds exactly the states,
/// records and tree the appends wrote — across many runs, with personal values disclosed
/// from the run — and repairs a tree that is not the log's.
@Suite(.enabled(if: StorageKind.postgresURL != nil, "AUTHLEDGER_TEST_POSTGRES is not set (tools/test sets it)"))
struct PostgresReplayTests {
    /// A digest of every row of `table` of the store in key order (60 bits of their md5).
    static func digest(_ admin: PostgresStorage, _ schema: String, _ table: String, _ columns: String, order: String) async throws -> Int64 {
        try await admin.integers("""
            SELECT coalesce(('x' || substr(md5(string_agg(concat_ws(':', \(columns)), ',' ORDER BY \(order))), 1, 15))::bit(60)::int8, 0)
            FROM \(schema).\(table)
            """)[0]
    }

    /// The stored records and tree (their digests, and the records' count).
    static func digests(_ admin: PostgresStorage, _ schema: String) async throws -> [Int64] {
        [try await digest(admin, schema, "records", "kind, encode(owner, 'hex'), encode(id, 'hex'), encode(bytes, 'hex')", order: "kind, owner, id"),
         try await digest(admin, schema, "tiles", "tile, encode(hashes, 'hex')", order: "tile"),
         try await admin.integers("SELECT count(*) FROM \(schema).records")[0]]
    }

    /// The stored projection states, decoded (a state's bytes follow its dictionaries' order,
    /// which is not the same from one fold to the next), and each user's stream head.
    static func states(_ ledger: Ledger) async throws -> ([String: UserState], SystemState?, [String: StreamHead]) {
        var load = ReadLoad()
        load.allStates = true
        return try await ledger.read(load) { r in
            var users: [String: UserState] = [:]
            var system: SystemState?
            var heads: [String: StreamHead] = [:]
            try r.scanProjectionStates { key, bytes in
                if key == systemStream { system = try StateCodec.decodeSystem(bytes) } else {
                    users[key] = (try? StateCodec.decode(bytes, user: key)) ?? UserState(user: "(undecodable)")
                    heads[key] = try? StateCodec.decodeStream(bytes).head
                }
                return true
            }
            return (users, system, heads)
        }
    }

    @Test(arguments: ["scenarios", "personal"])
    func replayInRunsRebuildsWhatTheAppendsWrote(_ history: String) async throws {
        // Given a store with every scenario (five users, a policy stream), or users with personal values
        let ledger: Ledger
        if history == "scenarios" {
            ledger = try await LedgerTests.allScenarios(.postgres)
        } else {
            ledger = try await StorageKind.postgres.freshLedger()
            try await ledger.importText(PersonalDataTests.history)
        }
        let store = try #require((ledger.storage as? PostgresStorage)?.location)
        let admin = try await PostgresStorage(url: StorageKind.postgresURL! + "?schema=" + store.schema)
        let before = try await Self.digests(admin, store.schema)
        let root = try await ledger.treeHead().root
        let states = try await Self.states(ledger)
        #expect(before[1] != 0 && states.0.count >= 2)
        // When it is replayed in runs of 1, 2 and 3 events (many runs, a last one cut short)
        for run in [1, 2, 3] {
            Ledger.replayRun = run
            defer { Ledger.replayRun = 4096 }
            #expect(try await ledger.replay() > 0)
            // Then every state, record and tree hash is the one the appends wrote
            let after = try await Self.digests(admin, store.schema)
            #expect(after == before, "runs of \(run): \(before) → \(after)")
            let replayed = try await Self.states(ledger)
            #expect(replayed.0 == states.0 && replayed.1 == states.1 && replayed.2 == states.2, "runs of \(run)")
        }
        #expect(states.2.count == states.0.count && states.2.values.allSatisfy { $0.last > 0 })
        // When a tree hash is changed (stored index 1: the leaf of seq 2, which a partition
        // folds into its user's stream hash), or the last one is missing, then replay repairs
        // the tree, and every stream hash is the events' own, not one over the stored leaf
        // (the hashes of stored indexes 128 × tile … in the tile's row, 32 bytes each)
        for change in ["UPDATE {T} SET hashes = overlay(hashes PLACING '\\x\(String(repeating: "09", count: 32))'::bytea FROM 33 FOR 32) WHERE tile = 0",
                       "UPDATE {T} SET hashes = substring(hashes FROM 1 FOR length(hashes) - 32) WHERE tile = (SELECT max(tile) FROM {T})"] {
            _ = try await admin.integers(change.replacingOccurrences(of: "{T}", with: store.schema + ".tiles"))
            #expect(try await Self.digests(admin, store.schema) != before)
            _ = try await ledger.replay()
            #expect(try await Self.digests(admin, store.schema) == before)
            #expect(try await ledger.treeHead().root == root)
            #expect(try await Self.states(ledger).2 == states.2, "\(change)")
        }
        // When a stored event's hash, prev or id is changed, then replay refuses the log
        // (`tampered` at that seq) instead of rebuilding the tree over it; restored, it replays
        for offset in [34, 2, 80] {
            let flip = "UPDATE \(store.schema).events SET bytes = set_byte(bytes, \(offset), get_byte(bytes, \(offset)) # 1) WHERE seq = 3"
            _ = try await admin.integers(flip)
            do {
                _ = try await ledger.replay()
                Issue.record("byte \(offset) of event 3 changed: replayed")
            } catch let e as LedgerError {
                #expect(e.code == .tampered && e.seq == 3, "byte \(offset): \(e)")
            }
            _ = try await admin.integers(flip)
            _ = try await ledger.replay()
            #expect(try await Self.digests(admin, store.schema) == before)
        }
        // When records and states are added, removed or changed behind the ledger's back,
        // then replay writes back exactly the ones the log gives
        for change in ["INSERT INTO {S}.records VALUES (1, '\\x01', '\\x02', '\\x03')",
                       "DELETE FROM {S}.records WHERE ctid = (SELECT ctid FROM {S}.records LIMIT 1)",
                       "UPDATE {S}.records SET bytes = '\\x00' WHERE ctid = (SELECT ctid FROM {S}.records LIMIT 1)",
                       "DELETE FROM {S}.states WHERE ctid = (SELECT ctid FROM {S}.states LIMIT 1)",
                       "INSERT INTO {S}.states VALUES ('\\x7a7a', '\\x01')"] {
            _ = try await admin.integers(change.replacingOccurrences(of: "{S}", with: store.schema))
            // (The row deleted may be the `$system` state: the replay rewrites only what changed,
            // so the rows keep their places and the first is not always a user's.)
            let changed = try await Self.states(ledger)
            #expect(try await Self.digests(admin, store.schema) != before || changed.0 != states.0 || changed.1 != states.1, "\(change)")
            _ = try await ledger.replay()
            #expect(try await Self.digests(admin, store.schema) == before, "\(change)")
            let replayed = try await Self.states(ledger)
            #expect(replayed.0 == states.0 && replayed.1 == states.1 && replayed.2 == states.2, "\(change)")
        }
        #expect(try await ledger.verify() == ledger.head())
    }

    /// `verify` reads the log in runs (`SnapshotReading.indexedRuns`): across many runs, and
    /// in one, it passes the untouched store and names each change made behind the ledger's
    /// back with the error, message and seq its checks name — an index entry checked
    /// through the row's own id, stream and version, the tree through the hashes each run
    /// brought, the records and states loaded after the scan; each change undone, it passes.
    @Test(arguments: [1, 3, 4096])
    func verifyInRunsNamesEachChange(_ run: Int) async throws {
        let ledger = try await LedgerTests.allScenarios(.postgres)
        let store = try #require((ledger.storage as? PostgresStorage)?.location)
        let admin = try await PostgresStorage(url: StorageKind.postgresURL! + "?schema=" + store.schema)
        Ledger.verifyRun = run
        defer { Ledger.verifyRun = 4096 }
        let head = try await ledger.head()
        #expect(try await ledger.verify() == head)
        let first = "(SELECT kind, owner, id FROM {S}.records ORDER BY kind, owner, id LIMIT 1)"
        let user = "(SELECT key FROM {S}.states WHERE key <> '\\x2473797374656d'::bytea ORDER BY key LIMIT 1)"
        let changes: [(change: String, undo: String, message: String, seq: UInt64?)] = [
            ("UPDATE {S}.events SET id = '\\x00'::bytea || id WHERE seq = 3", "UPDATE {S}.events SET id = substring(id FROM 2) WHERE seq = 3",
             "id index does not point at this event", 3),
            ("UPDATE {S}.events SET version = version + 1000 WHERE seq = 4", "UPDATE {S}.events SET version = version - 1000 WHERE seq = 4",
             "stream index does not point at this event", 4),
            ("UPDATE {S}.events SET seq = seq + 1000000 WHERE seq = 5", "UPDATE {S}.events SET seq = seq - 1000000 WHERE seq = 1000005",
             "event missing", 5),
            ("UPDATE {S}.events SET seq = seq + 1000000 WHERE seq = \(head.seq)", "UPDATE {S}.events SET seq = seq - 1000000 WHERE seq = \(head.seq + 1000000)",
             "event missing", head.seq),
            ("UPDATE {S}.tiles SET hashes = set_byte(hashes, 40, get_byte(hashes, 40) # 1) WHERE tile = 0",
             "UPDATE {S}.tiles SET hashes = set_byte(hashes, 40, get_byte(hashes, 40) # 1) WHERE tile = 0",
             "the Merkle tree's leaf 1 (seq 2) differs from the leaf hash of the event", 2),
            ("UPDATE {S}.records SET bytes = bytes || '\\x00'::bytea WHERE (kind, owner, id) = \(first)",
             "UPDATE {S}.records SET bytes = substring(bytes FROM 1 FOR length(bytes) - 1) WHERE (kind, owner, id) = \(first)",
             "index entry differs from a replay of its stream", nil),
            ("INSERT INTO {S}.records VALUES (1, '\\x01', '\\x02', '\\x03')", "DELETE FROM {S}.records WHERE owner = '\\x01'",
             "index holds entries no event made", head.seq + 1),
            // (The first user's state under another key: the first still, so the undo finds it.)
            ("UPDATE {S}.states SET key = key || '\\x00'::bytea WHERE key = \(user)",
             "UPDATE {S}.states SET key = substring(key FROM 1 FOR length(key) - 1) WHERE key = \(user)",
             "a maintained projection differs from a replay of its stream", head.seq + 1),
            ("DELETE FROM {S}.tiles WHERE tile = (SELECT max(tile) FROM {S}.tiles)", "", "the Merkle tree has no", nil),
        ]
        for c in changes {
            _ = try await admin.integers(c.change.replacingOccurrences(of: "{S}", with: store.schema))
            let e = await refusal { try await ledger.verify() }
            #expect(e?.code == .tampered && e?.message.contains(c.message) == true, "runs of \(run), \(c.change): \(String(describing: e))")
            if let seq = c.seq { #expect(e?.seq == seq, "runs of \(run), \(c.change): \(String(describing: e))") }
            if c.undo.isEmpty { break }
            _ = try await admin.integers(c.undo.replacingOccurrences(of: "{S}", with: store.schema))
            #expect(try await ledger.verify() == head, "runs of \(run), undone: \(c.change)")
        }
    }
}
