import AuthLedgerCore
import AuthLedgerTestSupport
import Foundation
import Testing
@testable import AuthLedger

/// The stored user index (reference section 14): its pages, updated a batch of changed users
/// at a time, hold the tree the definition computes from every user's events; proofs read
/// from them verify; `verify` names an index rewritten to lie, a broken page and a lost one.
@Suite struct UserIndexStoreTests {
    let group = GroupCommitTests()

    /// Every user's key and commitment at the head, from its events by the core's definitions.
    static func expectedLeaves(_ ledger: Ledger, _ users: [String]) async throws -> [Hash32: Hash32] {
        var out: [Hash32: Hash32] = [:]
        for u in users {
            let e = try await StreamHashTests.expected(ledger, u)
            if e.count > 0 { out[UserIndex.key(u)] = UserIndex.commitment(count: e.count, streamHash: e.hash, last: e.last) }
        }
        return out
    }

    /// A ledger with `n` users in three batches, the index brought up to date after each.
    func indexed(_ storage: StorageKind, users n: Int) async throws -> (Ledger, [String]) {
        let ledger = try await storage.freshLedger()
        let users = (0..<n).map { "user\($0)" }
        #expect(try await ledger.updateUserIndex() == nil, "an empty log has nothing to index")
        for batch in 0..<3 {
            // New users, then more events of some earlier ones.
            let new = users[(batch * n / 3)..<((batch + 1) * n / 3)].map { group.register($0) }
            let more = batch == 0 ? [] : (0..<40).map { group.access(users[$0 * 7 % (batch * n / 3)], at: 10 + Int64(batch)) }
            _ = try await ledger.append(new + more)
            let entry = try #require(try await ledger.updateUserIndex())
            let (size, root) = (entry.size, entry.indexRoot)
            #expect(entry.index == UInt64(batch))
            #expect(size == (try await ledger.head()).seq)
            #expect(entry.logRoot == (try await ledger.treeHead()).root)
            #expect(entry.changed == new.count + Set(more.map { $0.event.user! }).count)
            let want = try await Self.expectedLeaves(ledger, users)
            #expect(root == UserIndex.root(of: want.map { ($0.key, $0.value) }), "batch \(batch)")
            #expect(try await ledger.updateUserIndex() == nil, "nothing new since")
        }
        return (ledger, users)
    }

    @Test(arguments: StorageKind.all) func batchesKeepTheDefinitionsRootAndProofsVerify(_ storage: StorageKind) async throws {
        let (ledger, users) = try await indexed(storage, users: 600)
        let want = try await Self.expectedLeaves(ledger, users)
        var tree = UserIndexTree()
        for (k, c) in want { tree.set(k, commitment: c) }
        for u in users.prefix(60) + ["nobody", "user600"] {
            let a = try await ledger.userIndexAnswer(u)
            let key = UserIndex.key(u)
            #expect(a.root == tree.root())
            #expect(a.proof == tree.proof(for: key), "\(u): the stored pages give the in-memory tree's proof")
            #expect(a.proof.verifies(key: key, commitment: want[key], root: a.root))
            if let c = want[key] {
                #expect(c == UserIndex.commitment(count: a.count, streamHash: a.streamHash, last: a.last))
            } else {
                #expect(a.count == 0)
            }
        }
        try await ledger.verify()
    }

    @Test(arguments: StorageKind.all) func aProofAnswersAtTheIndexedSizeNotTheHead(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        _ = try await ledger.append(group.script("alice", 4) + [group.register("bob")])
        try await ledger.updateUserIndex()
        let before = try await ledger.userIndexAnswer("alice")
        _ = try await ledger.append([group.access("alice", at: 50), group.register("carol")])
        let after = try await ledger.userIndexAnswer("alice")
        #expect(after.size == before.size && after.count == 4 && after.streamHash == before.streamHash && after.root == before.root)
        #expect(try await ledger.userIndexAnswer("carol").count == 0)
        try await ledger.verify()
        try await ledger.updateUserIndex()
        #expect(try await ledger.userIndexAnswer("alice").count == 5)
        #expect(try await ledger.userIndexAnswer("carol").count == 1)
        try await ledger.verify()
    }

    static func verifyRefusal(_ ledger: Ledger) async -> LedgerError? {
        do { try await ledger.verify(); return nil } catch { return error as? LedgerError }
    }

    @Test(arguments: StorageKind.all) func anIndexRewrittenToLieIsNamed(_ storage: StorageKind) async throws {
        let (ledger, _) = try await indexed(storage, users: 300)
        // Consistently rewritten: user17's commitment changed, every hash above it recomputed.
        // (What the rewrite reads named first: the index's position and the pages on user17's
        // path, 64 levels at most for 300 users; a page not there loads as absent.)
        let path = (0..<64).map { UserIndexPages.pageKey(UserIndex.key("user17"), depth: $0) }
        try await ledger.write(meta: [UserIndexPages.stateKey] + path) { w in
            let (size, _) = try UserIndexPages.position(w)
            let root = try UserIndexPages.update(w, [(UserIndex.key("user17"), Hash32(bytes: Array(repeating: 7, count: 32)))])
            try w.putMetaValue(UserIndexPages.stateKey, size.bigEndianBytes8 + root.bytes)
        }
        let e = try #require(await Self.verifyRefusal(ledger))
        #expect(e.code == .tampered && e.message.contains("wrong commitment for user17"), "\(e.message)")
        // And a proof for user17 is refused rather than served.
        await #expect(throws: LedgerError.self) { try await ledger.userIndexAnswer("user17") }
    }

    @Test(arguments: StorageKind.all) func aBrokenOrLostPageIsNamed(_ storage: StorageKind) async throws {
        let (ledger, users) = try await indexed(storage, users: 600)
        // A page 8 levels down (a subtree there holding two users or more).
        var found: (String, [UInt8])?
        for u in users where found == nil {
            let name = UserIndexPages.pageKey(UserIndex.key(u), depth: 8)
            if let bytes = try await ledger.read(ReadLoad(meta: [name]), { r in try r.metaValue(name) }) { found = (name, bytes) }
        }
        let (name, original) = try #require(found)
        // A hash byte of the page flipped.
        var broken = original
        broken[2] ^= 0x40
        try await ledger.write { w in try w.putMetaValue(name, broken) }
        let e = try #require(await Self.verifyRefusal(ledger))
        #expect(e.code == .tampered && e.message.contains("user index page"), "\(e.message)")
        // The page gone.
        try await ledger.write { w in try w.putMetaValue(name, nil) }
        let lost = try #require(await Self.verifyRefusal(ledger))
        #expect(lost.code == .tampered && lost.message.contains(name), "\(lost.message)")
        // Put back: verify passes again.
        try await ledger.write { w in try w.putMetaValue(name, original) }
        try await ledger.verify()
    }

    // MARK: The index log

    static func bigEndian(_ b: ArraySlice<UInt8>) -> UInt64 { b.reduce(0) { $0 << 8 | UInt64($1) } }

    @Test(arguments: StorageKind.all) func theIndexLogHoldsAnEntryPerUpdateAndServesItLikeTheLog(_ storage: StorageKind) async throws {
        let (ledger, _) = try await indexed(storage, users: 90)
        _ = try await ledger.append([group.register("late")])
        try await ledger.updateUserIndex()
        let (n, root) = try await ledger.usersTreeHead()
        #expect(n == 4)
        var leaves: [Hash32] = [], entries: [[UInt8]] = [], previous: UInt64 = 0
        for i in 0..<n {
            let e = try await ledger.usersEntry(i)
            let s = Self.bigEndian(e[0..<8])
            #expect(e.count == 72 && s > previous)
            #expect(Array(e[8..<40]) == (try await ledger.treeHead(size: s)).root.bytes, "R_S is the log's root at S")
            previous = s
            entries.append(e)
            leaves.append(MerkleTree.leafHash(e))
        }
        #expect(Array(entries.last![40..<72]) == (try await ledger.userIndexAnswer("late")).root.bytes)
        for i in 0..<n {
            let p = try await ledger.usersInclusionProof(index: i)
            #expect(p.root == root && MerkleTree.verifyInclusion(leafHash: leaves[Int(i)], index: i, size: n, proof: p.proof, root: root))
        }
        let c = try await ledger.usersConsistencyProof(from: 2, to: n)
        let old = try await ledger.usersTreeHead(size: 2)
        #expect(MerkleTree.verifyConsistency(oldSize: 2, oldRoot: old.root, newSize: n, newRoot: root, proof: c.proof))
        // Tiles: the leaf hashes, and the entries behind a two-byte length.
        #expect(try await ledger.usersHashTile(level: 0, index: 0, width: Int(n)) == leaves.flatMap(\.bytes))
        #expect(try await ledger.usersEntryBundle(index: 0, width: Int(n)) == entries.flatMap { [0, 72] + $0 })
        await #expect(throws: LedgerError.self) { try await ledger.usersHashTile(level: 0, index: 0, width: Int(n) + 1) }
        // Signed under its own origin with the log's key.
        let signer = try ledger.usersCheckpointSigner()
        #expect(signer.origin == ledger.usersOrigin() && signer.origin.hasSuffix("/users"))
        let note = try await ledger.usersCheckpoint(signer: signer)
        #expect(note.hasPrefix("\(signer.origin)\n\(n)\n\(Data(root.bytes).base64EncodedString())\n\n— \(signer.origin) "))
        try await ledger.verify()
    }

    /// Two servers on one PostgreSQL store: appends and index updates of both, at once, make
    /// one index log whose entries' sizes increase and which the audit recomputes.
    @Test func twoLedgersOnOnePostgreSQLStoreShareOneIndexLog() async throws {
        guard StorageKind.all.contains(.postgres) else { return }
        let store = StorageKind.postgres.freshStore(), keys = StorageKind.postgres.keyDirectory(for: store)
        let one = try await StorageKind.postgres.open(store, keys: keys), two = try await StorageKind.postgres.open(store, keys: keys)
        try await withThrowingTaskGroup(of: Void.self) { g in
            for (k, ledger) in [one, two].enumerated() {
                g.addTask {
                    for round in 0..<8 {
                        _ = try await ledger.append((0..<5).map { self.group.register("s\(k)-r\(round)-u\($0)") })
                        try await ledger.updateUserIndex()
                    }
                }
            }
            try await g.waitForAll()
        }
        try await one.updateUserIndex()
        let (n, _) = try await two.usersTreeHead()
        var previous: UInt64 = 0
        for i in 0..<n {
            let s = Self.bigEndian(try await two.usersEntry(i)[0..<8])
            #expect(s > previous, "entry \(i)")
            previous = s
        }
        #expect(previous == (try await one.head()).seq)
        #expect(try await two.auditUserIndex().entries == n)
        try await one.verify()
        let proof = try await two.userIndexAnswer("s0-r7-u4")
        #expect(proof.count == 1 && proof.size == previous)
    }

    @Test(arguments: StorageKind.all) func anAuditRecomputesEveryEntryAndNamesAWrongOne(_ storage: StorageKind) async throws {
        let (ledger, _) = try await indexed(storage, users: 90)
        let audited = try await ledger.auditUserIndex()
        let head = try await ledger.head().seq
        #expect(audited.entries == 3 && audited.size == head)
        // An older entry's index root changed (verify checks the newest one only): named by the audit.
        let e = try await ledger.usersEntry(1)
        var wrong = e
        wrong[50] ^= 1
        try await ledger.write { w in try w.putMetaValue(UserIndexLog.entryKey(1), wrong) }
        await #expect {
            try await ledger.auditUserIndex()
        } throws: { error in
            let e = error as? LedgerError
            return e?.code == .tampered && e?.message.contains("entry 1 (size \(Self.bigEndian(wrong[0..<8])))") == true
                && e?.message.contains("index root") == true
        }
    }

    @Test(arguments: StorageKind.all) func aWrongIndexLogEntryIsNamed(_ storage: StorageKind) async throws {
        let (ledger, _) = try await indexed(storage, users: 90)
        let e = try await ledger.usersEntry(1)
        var wrong = e
        wrong[20] ^= 1
        try await ledger.write { w in try w.putMetaValue(UserIndexLog.entryKey(1), wrong) }
        let refusal = try #require(await Self.verifyRefusal(ledger))
        #expect(refusal.code == .tampered && refusal.message.contains("entry 1 (size \(Self.bigEndian(e[0..<8])))"), "\(refusal.message)")
    }

    @Test(arguments: StorageKind.all) func aUserProofFoldsToItsEntryAndBothCheckpoints(_ storage: StorageKind) async throws {
        let ledger = try await storage.freshLedger()
        await #expect(throws: LedgerError.self) { try await ledger.userProof("alice") }
        _ = try await ledger.append(group.script("alice", 4) + (0..<30).map { group.register("u\($0)") })
        try await ledger.updateUserIndex()
        _ = try await ledger.append([group.access("alice", at: 60)])
        try await ledger.updateUserIndex()
        let log = try ledger.checkpointSigner(), users = try ledger.usersCheckpointSigner()
        for (user, count) in [("alice", 5), ("nobody", 0)] {
            let p = try await ledger.userProof(user)
            let j = try p.json(log: log, users: users)
            #expect(j["count"]?.intValue == Int64(count) && j["size"]?.intValue == 35 && j["user"]?.stringValue == user)
            let key = UserIndex.key(user)
            let want = count == 0 ? nil : try await StreamHashTests.expected(ledger, user)
            #expect(p.index.proof.verifies(key: key, commitment: want.map { UserIndex.commitment(count: $0.count, streamHash: $0.hash, last: $0.last) }, root: p.index.root))
            let entry = UserIndexLog.entry(size: 35, logRoot: (try await ledger.treeHead(size: 35)).root, indexRoot: p.index.root)
            #expect(MerkleTree.verifyInclusion(leafHash: MerkleTree.leafHash(entry), index: p.entryIndex, size: p.entryProof.treeSize,
                                               proof: p.entryProof.proof, root: p.entryProof.root))
            #expect(j["checkpoint"]?.stringValue == (try await ledger.checkpoint(size: 35, signer: log)))
            #expect(j["usersCheckpoint"]?.stringValue == (try await ledger.usersCheckpoint(signer: users)))
            let type = j["proof"]?["terminal"]?["type"]?.stringValue
            #expect(count > 0 ? type == "leaf" : (type == "leaf" || type == "empty"))
            #expect(j["proof"]?["siblings"]?.arrayValue?.count == p.index.proof.siblings.count)
        }
    }
}
