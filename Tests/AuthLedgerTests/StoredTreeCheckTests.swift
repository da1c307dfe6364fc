@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
import AuthLedgerTestSupport
import Foundation
import LMDB
import Testing

/// Replay leaves an intact Merkle tree unwritten: the stored tree is compared with the
/// log in chunked walks. The comparison must say "same" exactly when every stored hash is
/// the one the log's events give, for every tree shape.
@Suite struct StoredTreeCheckTests {
    @Test(arguments: [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33])
    func theWalkAgreesWithTheLogExactlyWhenTheTreeIsIntact(_ n: Int) async throws {
        let path = Support.tempDir("treecheck")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ledger = try await VerifiableLogTests.ledger(events: n, path: path)
        let root = try await ledger.treeHead().root
        // Intact: the same, whatever the chunk size
        for chunk in [1, 2, 3, 64] {
            #expect(try ledger.inPlace.read { try Ledger.storedTreeMatchesLog($0, through: UInt64(n), chunk: chunk) }, "chunk \(chunk)")
            #expect(try Self.replayFindsTreeIntact(ledger, n, chunk: chunk), "replay's pieces, chunk \(chunk)")
        }
        // One event more or less than the tree covers: not the same
        #expect(try !ledger.inPlace.read { try Ledger.storedTreeMatchesLog($0, through: UInt64(n + 1)) })
        if n > 1 { #expect(try !ledger.inPlace.read { try Ledger.storedTreeMatchesLog($0, through: UInt64(n - 1)) }) }
        // A stored hash changed — a leaf at the start, the middle and the end, the last
        // hash, an interior one: not the same, and replay repairs it
        let stored = MerkleTree.storedHashCount(UInt64(n))
        let leafIndexes = Set([0, n / 2, n - 1]).map { MerkleTree.storedHashIndex(level: 0, UInt64($0)) }
        for index in Set(leafIndexes + [stored - 1, stored / 2]) {
            try VerifiableLogTests.tamperTree(path) { txn, tree in try txn.put(tree, index.bigEndianBytes, [UInt8](repeating: 9, count: 32)) }
            let reopened = try await Ledger(lmdb: path)
            for chunk in [1, 3, 64] {
                #expect(try !reopened.inPlace.read { try Ledger.storedTreeMatchesLog($0, through: UInt64(n), chunk: chunk) }, "hash \(index) of \(stored), chunk \(chunk)")
                #expect(try !Self.replayFindsTreeIntact(reopened, n, chunk: chunk), "replay's pieces: hash \(index) of \(stored), chunk \(chunk)")
            }
            try await reopened.replay()
            #expect(try reopened.inPlace.read { try Ledger.storedTreeMatchesLog($0, through: UInt64(n)) })
            #expect(try await reopened.treeHead().root == root)
            try await reopened.verify()
        }
    }

    /// Whether replay's pieces (partitions and tree chunks over the cores, in any order)
    /// find the stored tree intact: no leaves handed back for a rebuild.
    /// Replay checks the hash chain beside the tree: a stored event whose `hash`, `prev` or
    /// content (its id) was changed is `tampered` at its seq, in whichever chunk it falls,
    /// and the tree is not rebuilt over it. Restored, the log replays again.
    @Test(arguments: [(34, "hash does not match the event's content"), (2, "prev does not link to the previous hash"),
                      (80, "hash does not match the event's content")] as [(Int, String)])
    func replayRefusesALogWhoseChainIsBroken(_ offset: Int, _ message: String) async throws {
        let path = Support.tempDir("chaincheck")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let n = 40
        let ledger = try await VerifiableLogTests.ledger(events: n, path: path)
        let root = try await ledger.treeHead().root
        for seq in [1, 17, UInt64(n)] as [UInt64] {
            try Self.flipEventByte(path, seq: seq, at: offset)
            let changed = try await Ledger(lmdb: path)
            for chunk in [1, 3, 64] {
                let e = Self.refusal { _ = try Self.replayFindsTreeIntact(changed, n, chunk: chunk) }
                #expect(e?.code == .tampered && e?.seq == seq && e?.message == message, "seq \(seq), chunk \(chunk): \(String(describing: e))")
            }
            let e = await Self.refusal { try await changed.replay() }
            #expect(e?.code == .tampered && e?.seq == seq, "seq \(seq): \(String(describing: e))")
            try Self.flipEventByte(path, seq: seq, at: offset)
            let restored = try await Ledger(lmdb: path)
            #expect(try Self.replayFindsTreeIntact(restored, n, chunk: 3))
            try await restored.replay()
            #expect(try await restored.treeHead().root == root)
        }
    }

    static func refusal(_ body: () throws -> Void) -> LedgerError? {
        do { try body() } catch let e as LedgerError { return e } catch { return LedgerError(.storageError, "\(error)") }
        return nil
    }

    static func refusal(_ body: () async throws -> Void) async -> LedgerError? {
        do { try await body() } catch let e as LedgerError { return e } catch { return LedgerError(.storageError, "\(error)") }
        return nil
    }

    /// Flips the low bit of the stored event's byte at `offset` (2…33: `prev`, 34…65: `hash`, 66…81: the id).
    static func flipEventByte(_ store: String, seq: UInt64, at offset: Int) throws {
        let env = try Environment(path: store)
        let events = try env.database("events")
        try env.write { txn in
            var v = try #require(try txn.get(events, seq.bigEndianBytes))
            v[offset] ^= 1
            try txn.put(events, seq.bigEndianBytes, v)
        }
    }

    static func replayFindsTreeIntact(_ ledger: Ledger, _ n: Int, chunk: Int) throws -> Bool {
        let leaves = LeafBuffer()
        ledger.replayInPieces(try ledger.inPlace, parts: 2, through: UInt64(n), box: ReplayPartitions(2), leaves: leaves, progress: nil, chunk: chunk)
        return try leaves.result!.get() == nil
    }

    /// The map's pages are found and let go; what is read afterwards is the same.
    @Test func lettingGoOfMapPagesKeepsEveryEventReadable() async throws {
        let path = Support.tempDir("mappages")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ledger = try await VerifiableLogTests.ledger(events: 50, path: path)
        let before = try await ledger.events().map(\.json)
        guard let lmdb = ledger.storage as? LMDBStorage else { Issue.record("not LMDB"); return }
        #expect(!lmdb.environment.mappedRegions().isEmpty)
        lmdb.environment.releaseMappedPages()
        #expect(try await ledger.events().map(\.json) == before)
        try await ledger.verify()
        #expect(lmdb.environment.usedSize > 0)
    }
}
