@_spi(Storage) @testable import AuthLedger
import AuthLedgerTestSupport
import Foundation
import LMDB
import Testing

/// Replay leaves an intact Merkle tree unwritten: the stored tree is compared with the
/// one over the leaves in one walk. The comparison must say "same" exactly when every
/// stored hash is the one the leaves give, for every tree shape.
@Suite struct StoredTreeCheckTests {
    static func leafBytes(_ ledger: Ledger) throws -> [UInt8] {
        try VerifiableLogTests.leaves(ledger).flatMap(\.bytes)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33])
    func theWalkAgreesWithTheLeavesExactlyWhenTheTreeIsIntact(_ n: Int) throws {
        let path = Support.tempDir("treecheck")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ledger = try VerifiableLogTests.ledger(events: n, path: path)
        let leaves = try Self.leafBytes(ledger)
        // Intact: the same
        #expect(try ledger.storage.read { try Ledger.storedTreeMatches($0, leaves: leaves) })
        // The chunked walk over the log (what replay runs) agrees, whatever the chunk size
        for chunk in [1, 2, 3, 64] {
            #expect(try ledger.storage.read { try Ledger.storedTreeMatchesLog($0, through: UInt64(n), chunk: chunk) }, "chunk \(chunk)")
        }
        // A leaf that is not the stored one, at the start, the middle and the end: not the same
        for k in Set([0, n / 2, n - 1]) {
            var other = leaves
            other[k * 32] ^= 1
            #expect(try !ledger.storage.read { try Ledger.storedTreeMatches($0, leaves: other) }, "leaf \(k) of \(n)")
        }
        // One leaf more or less than the tree holds: not the same
        #expect(try !ledger.storage.read { try Ledger.storedTreeMatches($0, leaves: leaves + leaves.prefix(32)) })
        if n > 1 { #expect(try !ledger.storage.read { try Ledger.storedTreeMatches($0, leaves: Array(leaves.dropLast(32))) }) }
        // A stored hash changed (the last one, an interior one): not the same, and replay repairs it
        let stored = MerkleTree.storedHashCount(UInt64(n))
        for index in Set([stored - 1, stored / 2]) {
            try VerifiableLogTests.tamperTree(path) { txn, tree in try txn.put(tree, index.bigEndianBytes, [UInt8](repeating: 9, count: 32)) }
            let reopened = try Ledger(path: path)
            #expect(try !reopened.storage.read { try Ledger.storedTreeMatches($0, leaves: leaves) }, "hash \(index) of \(stored)")
            for chunk in [1, 3, 64] {
                #expect(try !reopened.storage.read { try Ledger.storedTreeMatchesLog($0, through: UInt64(n), chunk: chunk) }, "hash \(index), chunk \(chunk)")
            }
            try reopened.replay()
            #expect(try reopened.storage.read { try Ledger.storedTreeMatches($0, leaves: leaves) })
            try reopened.verify()
        }
    }

    /// The map's pages are found and let go; what is read afterwards is the same.
    @Test func lettingGoOfMapPagesKeepsEveryEventReadable() throws {
        let path = Support.tempDir("mappages")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ledger = try VerifiableLogTests.ledger(events: 50, path: path)
        let before = try ledger.events().map(\.json)
        guard let lmdb = ledger.storage as? LMDBStorage else { Issue.record("not LMDB"); return }
        #expect(!lmdb.environment.mappedRegions().isEmpty)
        lmdb.environment.releaseMappedPages()
        #expect(try ledger.events().map(\.json) == before)
        try ledger.verify()
        #expect(lmdb.environment.usedSize > 0)
    }
}
