import Crypto
import Foundation
@testable import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerCore
import LMDB
import AuthLedgerTestSupport
import Testing

/// The verifiable log (SPEC 6): the Merkle tree kept beside the events, its roots and
/// proofs, tiles, signed checkpoints, and `verify`/`replay` over the tree.
@Suite struct VerifiableLogTests {
    /// A store with `n` events: a user with a device accessed again and again.
    static func ledger(events n: Int, path: String = Support.tempDir("vlog")) async throws -> Ledger {
        let ledger = try await Ledger(lmdb: path)
        try await append(ledger, from: 1, count: n)
        return ledger
    }

    static func append(_ ledger: Ledger, from: Int, count: Int) async throws {
        var lines: [String] = []
        for k in from..<(from + count) {
            if k == 1 {
                lines.append(line("device.registered", at: "2026-03-01T09:00:00Z",
                                  data: #"{"deviceId":"phone","name":"My Phone","kind":"mobile","binding":"permanent","via":"initial"}"#))
            } else {
                lines.append(line("device.accessed", at: "2026-03-01T09:00:00Z", data: #"{"deviceId":"phone"}"#, meta: #"{"requestId":"r\#(k)"}"#))
            }
        }
        if !lines.isEmpty { try await ledger.importText(lines.joined(separator: "\n")) }
    }

    /// RFC 9162's MTH written as the RFC's recursion, over leaf hashes: the reference the stored tree is held to.
    static func mth(_ leaves: ArraySlice<Hash32>) -> Hash32 {
        if leaves.isEmpty { return MerkleTree.emptyRoot }
        if leaves.count == 1 { return leaves.first! }
        var k = 1
        while k * 2 < leaves.count { k *= 2 }
        let mid = leaves.startIndex + k
        return MerkleTree.nodeHash(mth(leaves[leaves.startIndex..<mid]), mth(leaves[mid...]))
    }

    /// The leaf hashes of the export, computed from `C` (`leafInput`) of every event.
    static func leaves(_ ledger: Ledger) async throws -> [Hash32] {
        var out: [Hash32] = []
        try await ledger.forEachEvent { e in
            out.append(MerkleTree.leafHash(RecordedEvent.leafInput(e.event, seq: e.seq, version: e.version)))
            return true
        }
        return out
    }

    @Test(arguments: StorageKind.all) func theEntryBytesHashToTheChainsLeaf(_ storage: StorageKind) async throws {
        // Given the recorded scenarios (every event type), the bytes C served as entries
        let ledger = try await LedgerTests.allScenarios(storage)
        try await ledger.forEachEvent { e in
            // Then SHA-256(0x00 ‖ C) is the leaf the chain hashes, and C is the JCS of the recorded form without prev and hash
            let c = RecordedEvent.leafInput(e.event, seq: e.seq, version: e.version)
            #expect(MerkleTree.leafHash(c) == Hash32(bytes: Array(RecordedEvent.leaf(e.event, seq: e.seq, version: e.version))))
            #expect(RecordedEvent.chain(prev: e.prev, leaf: RecordedEvent.leaf(e.event, seq: e.seq, version: e.version)) == e.hash)
            return true
        }
    }

    @Test(arguments: StorageKind.all) func theStoredTreeHasEveryRootOfTheRFCRecursion(_ storage: StorageKind) async throws {
        // Given a log of 70 events appended in batches of uneven sizes
        let ledger = try await storage.freshLedger()
        var n = 0
        for batch in [1, 2, 5, 8, 13, 21, 20] { try await Self.append(ledger, from: n + 1, count: batch); n += batch }
        let leaves = try await Self.leaves(ledger)
        #expect(leaves.count == 70)
        // Then the root of every size equals RFC 9162's MTH over the leaves
        for size in 0...70 {
            #expect(try await ledger.treeHead(size: UInt64(size)).root == Self.mth(leaves[0..<size]), "size \(size)")
        }
        // And the store holds exactly tlog's stored hash count
        let count = try await ledger.read(.treeHashCount) { try $0.treeHashCount() }
        #expect(count == MerkleTree.storedHashCount(70))
    }

    @Test func everyInclusionAndConsistencyProofVerifies() async throws {
        // Given a log of 40 events
        let ledger = try await Self.ledger(events: 40)
        let leaves = try await Self.leaves(ledger)
        for size in 1...40 {
            let root = Self.mth(leaves[0..<size])
            for seq in 1...size {
                // Then each event's proof leads from its leaf to the root of each size
                let p = try await ledger.inclusionProof(seq: UInt64(seq), size: UInt64(size))
                #expect(p.root == root && p.leafHash == leaves[seq - 1])
                #expect(MerkleTree.verifyInclusion(leafHash: leaves[seq - 1], index: UInt64(seq - 1), size: UInt64(size), proof: p.proof, root: root))
                // And not from another leaf
                #expect(!MerkleTree.verifyInclusion(leafHash: leaves[seq % size], index: UInt64(seq - 1), size: UInt64(size), proof: p.proof, root: root) || size == 1)
            }
            for old in 1...size {
                let c = try await ledger.consistencyProof(from: UInt64(old), to: UInt64(size))
                #expect(c.oldRoot == Self.mth(leaves[0..<old]) && c.newRoot == root)
                #expect(MerkleTree.verifyConsistency(oldSize: UInt64(old), oldRoot: c.oldRoot, newSize: UInt64(size), newRoot: root, proof: c.proof))
                if old < size {
                    // A different old root does not verify
                    #expect(!MerkleTree.verifyConsistency(oldSize: UInt64(old), oldRoot: leaves[0], newSize: UInt64(size), newRoot: root, proof: c.proof) || old == 1)
                }
            }
        }
    }

    @Test func proofsOutsideTheLogAreRefusedAsInvalid() async throws {
        let ledger = try await Self.ledger(events: 5)
        #expect(await refusal { _ = try await ledger.inclusionProof(seq: 0) }?.field == "seq")
        #expect(await refusal { _ = try await ledger.inclusionProof(seq: 6) }?.field == "seq")
        #expect(await refusal { _ = try await ledger.inclusionProof(seq: 3, size: 2) }?.field == "seq")
        #expect(await refusal { _ = try await ledger.inclusionProof(seq: 1, size: 6) }?.field == "size")
        #expect(await refusal { _ = try await ledger.consistencyProof(from: 0, to: 3) }?.field == "from")
        #expect(await refusal { _ = try await ledger.consistencyProof(from: 4, to: 3) }?.field == "from")
        #expect(await refusal { _ = try await ledger.consistencyProof(from: 1, to: 6) }?.field == "to")
        #expect(await refusal { _ = try await ledger.inclusionProof(seq: 1, size: 6) }?.code == .invalidEvent)
    }

    @Test func aRefusedRequestInAGroupCommitLeavesNoTreeNodes() async throws {
        // Given a log, when a group of requests commits with one refused among them
        let ledger = try await Self.ledger(events: 3)
        let ok = try inputs(line("device.accessed", at: "2026-03-01T09:00:00Z", data: #"{"deviceId":"phone"}"#))
        let bad = try inputs(line("device.accessed", at: "2026-03-01T09:00:00Z", data: #"{"deviceId":"nope"}"#))
        async let a = ledger.append(AppendRequest(ok))
        async let b = try? await ledger.append(AppendRequest(bad))
        async let c = ledger.append(AppendRequest(ok))
        _ = try await (a, b, c)
        // Then the tree covers exactly the appended events and verifies
        #expect(try await ledger.head().seq == 5)
        #expect(try await ledger.read(.treeHashCount) { try $0.treeHashCount() } == MerkleTree.storedHashCount(5))
        #expect(try await ledger.treeHead().root == Self.mth(try Self.leaves(ledger)[...]))
        try await ledger.verify()
    }

    @Test func aStoreWithoutATreeGetsOneAndReplayRebuildsIt() async throws {
        // Given a store whose tree is gone (a store from before the tree)
        let path = Support.tempDir("vlog")
        let root = try await Self.ledger(events: 33, path: path).treeHead().root
        try VerifiableLogTests.tamperTree(path) { txn, tree in try txn.clear(tree) }
        // Then opening it builds the tree again, and verify passes
        let reopened = try await Ledger(lmdb: path)
        #expect(try await reopened.treeHead().root == root)
        try await reopened.verify()
        // And replay rebuilds a damaged tree
        try VerifiableLogTests.tamperTree(path) { txn, tree in try txn.put(tree, UInt64(3).bigEndianBytes, [UInt8](repeating: 7, count: 32)) }
        await #expect(refusal { try await Ledger(lmdb: path).verify() }?.code == .tampered)
        try await Ledger(lmdb: path).replay()
        try await Ledger(lmdb: path).verify()
        #expect(try await Ledger(lmdb: path).treeHead().root == root)
    }

    @Test(arguments: StorageKind.all) func aStoreWhoseTreeIsGoneGetsItBackOnOpen(_ storage: StorageKind) async throws {
        // Given a store of 33 events whose tree is gone (a store from before the tree)
        let store = storage.freshStore()
        let keys = storage.keyDirectory(for: store)
        let root: Hash32
        do {
            let ledger = try await storage.open(store, keys: keys)
            try await Self.append(ledger, from: 1, count: 33)
            root = try await ledger.treeHead().root
            try await ledger.write { w in try w.clearTree() }
            await ledger.close()
        }
        // Then opening it builds the tree again (PostgreSQL: its log read in runs), and verify passes
        Ledger.replayRun = 8
        defer { Ledger.replayRun = 4096 }
        let reopened = try await storage.open(store, keys: keys)
        #expect(try await reopened.treeHead().root == root)
        try await reopened.verify()
    }

    @Test(arguments: StorageKind.all) func replayRebuildsATreeThatIsNotTheLogs(_ storage: StorageKind) async throws {
        // Given a store of 40 events whose tree is gone
        let ledger = try await storage.freshLedger()
        try await Self.append(ledger, from: 1, count: 40)
        let root = try await ledger.treeHead().root
        try await ledger.write { w in try w.clearTree() }
        #expect(await refusal { try await ledger.verify() }?.code == .tampered)
        // When the projections are replayed (PostgreSQL: the log in runs, read again for the tree)
        Ledger.replayRun = 6
        defer { Ledger.replayRun = 4096 }
        try await ledger.replay()
        // Then the tree is the log's again
        #expect(try await ledger.treeHead().root == root)
        try await ledger.verify()
    }

    static func tamperTree(_ store: String, _ body: (Transaction, Database) throws -> Void) throws {
        let env = try Environment(path: store)
        let tree = try env.database("tree")
        try env.write { txn in try body(txn, tree) }
    }

    @Test(arguments: [(0, 0 as UInt64), (0, 9), (1, 4), (3, 1)] as [(Int, UInt64)])
    func verifyNamesAChangedTreeNode(level: Int, index: UInt64) async throws {
        // Given a log of 20 events whose stored tree node (level, index) is changed
        let path = Support.tempDir("vlog")
        _ = try await Self.ledger(events: 20, path: path)
        try Self.tamperTree(path) { txn, tree in
            let key = MerkleTree.storedHashIndex(level: level, index).bigEndianBytes
            var v = try #require(try txn.get(tree, key))
            v[0] ^= 1
            try txn.put(tree, key, v)
        }
        // Then verify names the node and the seq at which it was found
        let e = try await #require(refusal { try await Ledger(lmdb: path).verify() })
        #expect(e.code == .tampered)
        let first = index << UInt64(level) + 1, last = (index + 1) << UInt64(level)
        #expect(e.seq == last)
        if level == 0 {
            #expect(e.message.contains("leaf \(index) (seq \(first))"))
        } else {
            #expect(e.message.contains("node at level \(level) index \(index) (seq \(first)–\(last))"))
        }
    }

    @Test func verifyNamesExtraTreeHashes() async throws {
        let path = Support.tempDir("vlog")
        _ = try await Self.ledger(events: 6, path: path)
        try Self.tamperTree(path) { txn, tree in
            try txn.put(tree, MerkleTree.storedHashCount(6).bigEndianBytes, [UInt8](repeating: 0, count: 32))
        }
        let e = try await #require(refusal { try await Ledger(lmdb: path).verify() })
        #expect(e.code == .tampered && e.seq == 7 && e.message.contains("beyond the log"))
    }

    @Test func aChainRewriteIsStillNamedByTheChainFirst() async throws {
        // Given an event changed and re-hashed (its successor's prev left alone): the
        // chain names the successor, as it did before the tree existed
        let path = Support.tempDir("vlog")
        _ = try await Self.ledger(events: 8, path: path)
        let env = try Environment(path: path)
        let events = try env.database("events")
        try env.write { txn in
            let seq: UInt64 = 4
            var r = try #require(try txn.get(events, seq.bigEndianBytes).map { b in try b.withUnsafeBytes { try EventCodec.decode($0, seq: seq) } })
            r.event.meta = StringMap([("requestId", "forged")])
            r.hash = RecordedEvent.computeHash(r.event, seq: seq, version: r.version, prev: r.prev)
            try txn.put(events, seq.bigEndianBytes, EventCodec.encode(r))
        }
        await #expect(refusal { try await Ledger(lmdb: path).verify() }?.seq == 5)
    }

    @Test func storedHashIndexesAreTlogs() {
        // tlog's layout: leaf n, then the subtrees it completes; consecutive, never reused
        var next: UInt64 = 0
        for n in 0..<UInt64(300) {
            #expect(MerkleTree.storedHashIndex(level: 0, n) == next)
            #expect(MerkleTree.storedHashCount(n) == next)
            var level = 1
            var m = n
            next += 1
            while m & 1 == 1 {
                #expect(MerkleTree.storedHashIndex(level: level, n >> UInt64(level)) == next)
                level += 1
                m >>= 1
                next += 1
            }
        }
        for index in 0..<UInt64(600) {
            let (level, n) = MerkleTree.splitStoredHashIndex(index)
            #expect(MerkleTree.storedHashIndex(level: level, n) == index)
        }
    }

    // MARK: Tiles

    @Test func hashTilesAndEntryBundlesHoldTheTree() async throws {
        // Given 300 events: one full level-0 tile and a partial one
        let ledger = try await Self.ledger(events: 300)
        let leaves = try await Self.leaves(ledger)
        let full = try await ledger.hashTile(level: 0, index: 0, width: 256)
        #expect(full == leaves[0..<256].flatMap(\.bytes))
        #expect(try await ledger.hashTile(level: 0, index: 1, width: 44) == leaves[256..<300].flatMap(\.bytes))
        #expect(try await ledger.hashTile(level: 0, index: 1, width: 10) == leaves[256..<266].flatMap(\.bytes))
        // A level-1 tile holds the level-8 hashes: the first is the root of the first 256 leaves
        #expect(try await ledger.hashTile(level: 1, index: 0, width: 1) == Self.mth(leaves[0..<256]).bytes)
        // Beyond the log: not found
        #expect(await refusal { _ = try await ledger.hashTile(level: 0, index: 1, width: 45) }?.code == .notFound)
        #expect(await refusal { _ = try await ledger.hashTile(level: 1, index: 0, width: 2) }?.code == .notFound)
        #expect(await refusal { _ = try await ledger.hashTile(level: 0, index: 2, width: 1) }?.code == .notFound)
        #expect(await refusal { _ = try await ledger.entryBundle(index: 1, width: 45) }?.code == .notFound)
        // Entry bundles: uint16 length + C, whose leaf hashes are the tree's leaves
        var bundle = try await ledger.entryBundle(index: 1, width: 44)[...]
        var k = 256
        while !bundle.isEmpty {
            let len = Int(bundle[bundle.startIndex]) << 8 | Int(bundle[bundle.startIndex + 1])
            let entry = Array(bundle.dropFirst(2).prefix(len))
            #expect(entry.count == len)
            #expect(MerkleTree.leafHash(entry) == leaves[k])
            bundle = bundle.dropFirst(2 + len)
            k += 1
        }
        #expect(k == 300)
    }

    // MARK: Checkpoints

    /// The test vector of Go's golang.org/x/mod/sumdb/note (note_test.go, TestSign):
    /// key PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz.
    @Test func signedNotesMatchGosSumdbNoteVector() throws {
        let skey = try #require(Data(base64Encoded: "AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"))
        let signer = try CheckpointSigner(origin: "PeterNeumann", seed: Array(skey.dropFirst()))
        #expect(signer.verifierKey == "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
        let text = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
        #expect(try signer.signNote(text) == text + "\n\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n")
    }

    @Test func theCheckpointIsOriginSizeAndRootSigned() async throws {
        let path = Support.tempDir("vlog")
        let ledger = try await Self.ledger(events: 9, path: path)
        let signer = try ledger.checkpointSigner(origin: "example.com/ledger")
        let note = try await ledger.checkpoint(size: 7, signer: signer)
        let root = try await ledger.treeHead(size: 7).root
        let body = "example.com/ledger\n7\n\(Data(root.bytes).base64EncodedString())\n"
        #expect(note.hasPrefix(body + "\n\u{2014} example.com/ledger "))
        // The signature line: key id then an Ed25519 signature of the body under the verifier key
        let sigLine = note.dropFirst(body.count + 1).dropLast()
        let blob = try #require(Data(base64Encoded: String(sigLine.split(separator: " ").last!)))
        #expect(blob.count == 68)
        let vkey = signer.verifierKey.split(separator: "+", maxSplits: 2)  // base64 may hold "+"
        #expect(vkey[0] == "example.com/ledger" && vkey[1] == String(format: "%08x", signer.keyID))
        #expect(blob.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } == signer.keyID)
        let pub = try Curve25519.Signing.PublicKey(rawRepresentation: try #require(Data(base64Encoded: String(vkey[2]))).dropFirst())
        #expect(pub.isValidSignature(blob.dropFirst(4), for: Data(body.utf8)))
        // The key file: 0600, in the store directory, the same key when opened again
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "/checkpoint.key")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try ledger.checkpointSigner(origin: "example.com/ledger").verifierKey == signer.verifierKey)
    }

    @Test(arguments: ["", "a b", "a+b", "tab\there", "new\nline"])
    func badOriginsAreRefused(origin: String) {
        #expect(throws: LedgerError.self) { try CheckpointSigner(origin: origin, seed: [UInt8](repeating: 1, count: 32)) }
    }
}
