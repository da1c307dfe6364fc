import AuthLedgerCore
import Foundation
import Testing

/// The user index's prefix tree (reference section 14): the incremental tree agrees with the
/// definition computed from scratch, its proofs fold to its root for present and absent users
/// and refuse what they must, and an independent implementation (tools/userindex.py) agrees.
@Suite struct UserIndexTests {
    /// A deterministic generator (the same users every run).
    struct SplitMix { var s: UInt64; mutating func next() -> UInt64 { s &+= 0x9E37_79B9_7F4A_7C15; var z = s; z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9; z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB; return z ^ (z >> 31) } }

    func streamHash(_ n: UInt64) -> Hash32 {
        var s = Hash32.zero
        for i in 0..<n { s = UserIndex.streamHash(s, leaf: Hash32(bytes: Array(repeating: UInt8(truncatingIfNeeded: i), count: 32))) }
        return s
    }

    @Test func emptyIndexAndOneUser() {
        var t = UserIndexTree()
        #expect(t.root() == .zero)
        let proof = t.proof(for: UserIndex.key("alice"))
        #expect(proof.siblings.isEmpty && proof.terminal == .empty)
        #expect(proof.verifies(key: UserIndex.key("alice"), commitment: nil, root: .zero))
        let c = UserIndex.commitment(count: 1, streamHash: streamHash(1), last: 1)
        t.set(UserIndex.key("alice"), commitment: c)
        // A lone leaf is the root itself.
        #expect(t.root() == UserIndex.leafHash(key: UserIndex.key("alice"), commitment: c))
        let bob = t.proof(for: UserIndex.key("bob"))
        #expect(bob.siblings.isEmpty && bob.commitment(for: UserIndex.key("bob")) == nil)
        #expect(bob.verifies(key: UserIndex.key("bob"), commitment: nil, root: t.root()))
        #expect(!bob.verifies(key: UserIndex.key("bob"), commitment: c, root: t.root()))
    }

    @Test func incrementalTreeAgreesWithTheDefinition() {
        var rng = SplitMix(s: 42)
        var t = UserIndexTree()
        var leaves: [Hash32: Hash32] = [:]
        for batch in 0..<6 {
            // New users and updates of earlier ones, as a commit interval brings them.
            for _ in 0..<(batch == 0 ? 1 : 150) {
                let user = "user-\(rng.next() % 600)"
                let n = rng.next() % 5 + 1
                let c = UserIndex.commitment(count: n, streamHash: streamHash(n), last: rng.next() % 10_000)
                t.set(UserIndex.key(user), commitment: c)
                leaves[UserIndex.key(user)] = c
            }
            let root = t.root()
            #expect(root == UserIndex.root(of: leaves.map { ($0.key, $0.value) }), "batch \(batch)")
            for i in 0..<40 {
                let key = UserIndex.key("user-\(i * 17)")
                let p = t.proof(for: key)
                #expect(p.verifies(key: key, commitment: leaves[key], root: root))
                #expect(p.siblings.count <= 64)
            }
        }
        #expect(t.count == leaves.count)
    }

    @Test func proofsRefuseWhatTheyMust() {
        var t = UserIndexTree()
        for i in 0..<100 { t.set(UserIndex.key("u\(i)"), commitment: UserIndex.commitment(count: UInt64(i + 1), streamHash: .zero, last: UInt64(i))) }
        let root = t.root()
        let key = UserIndex.key("u7")
        let c = UserIndex.commitment(count: 8, streamHash: .zero, last: 7)
        let p = t.proof(for: key)
        #expect(p.verifies(key: key, commitment: c, root: root))
        // Another commitment, another user's key, a changed sibling, a dropped sibling.
        #expect(!p.verifies(key: key, commitment: UserIndex.commitment(count: 9, streamHash: .zero, last: 7), root: root))
        #expect(!p.verifies(key: key, commitment: nil, root: root))
        #expect(!p.verifies(key: UserIndex.key("u8"), commitment: c, root: root))
        var changed = p
        changed.siblings[0].bytes[0] ^= 1
        #expect(!changed.verifies(key: key, commitment: c, root: root))
        var shorter = p
        shorter.siblings.removeLast()
        #expect(!shorter.verifies(key: key, commitment: c, root: root))
        // Hiding a user: the absent-user proof of another user's leaf does not pass for this key.
        let other = t.proof(for: UserIndex.key("u8"))
        #expect(other.root(for: key) != root || other.commitment(for: key) == nil)
        #expect(!other.verifies(key: key, commitment: nil, root: root))
        // An absent user's proof shows it absent, and no commitment passes.
        let absent = UserIndex.key("nobody")
        let q = t.proof(for: absent)
        #expect(q.verifies(key: absent, commitment: nil, root: root) && !q.verifies(key: absent, commitment: c, root: root))
    }

    /// tools/userindex.py, written apart from the Swift code, recomputes the root from the
    /// users and checks every proof.
    @Test func independentImplementationAgrees() throws {
        var t = UserIndexTree()
        var users: [JSON] = []
        for i in 0..<300 {
            let user = i % 7 == 0 ? "ü-\(i)/é" : "user-\(i)"
            let n = UInt64(i % 5 + 1), s = streamHash(n)
            t.set(UserIndex.key(user), commitment: UserIndex.commitment(count: n, streamHash: s, last: UInt64(1000 + i)))
            users.append(.object([("user", .string(user)), ("count", .int(Int64(n))), ("streamHash", .string(b64(s))), ("last", .int(Int64(1000 + i)))]))
        }
        let root = t.root()
        var proofs: [JSON] = []
        for user in ["user-1", "user-150", "ü-7/é", "nobody", "user-300", "x"] {
            let p = t.proof(for: UserIndex.key(user))
            let terminal: JSON = switch p.terminal {
            case .empty: .object([("type", .string("empty"))])
            case let .leaf(k, c): .object([("type", .string("leaf")), ("key", .string(b64(k))), ("commitment", .string(b64(c)))])
            }
            proofs.append(.object([("user", .string(user)), ("siblings", .array(p.siblings.map { .string(b64($0)) })), ("terminal", terminal)]))
        }
        let doc = JSON.object([("users", .array(users)), ("root", .string(b64(root))), ("proofs", .array(proofs))])
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("userindex-\(UUID().uuidString).json")
        try doc.serialized().write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try CLI.exec("/usr/bin/env", ["python3", Support.root.appendingPathComponent("tools/userindex.py").path, "vectors", file.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("300 users, 6 proofs: ok"))
    }

    func b64(_ h: Hash32) -> String { Data(h.bytes).base64EncodedString() }
}

/// The worked example of docs/VERIFIABLE-LOG.md ("User proofs"): its numbers are these.
@Suite struct UserIndexWorkedExampleTests {
    @Test func theDocumentedExampleHolds() throws {
        func h(_ hex: String) -> Hash32 { Hash32(hex: hex)! }
        func fill(_ b: UInt8) -> Hash32 { Hash32(bytes: Array(repeating: b, count: 32)) }
        let alice = UserIndex.key("alice"), bob = UserIndex.key("bob")
        #expect(alice == h("c1dbe2d5a36519cf3d6cfcbf2dd67faaa917708d796ffd78f6d56c40cb7163ab"))
        #expect(bob == h("adf0aa717c2dab97399706e7eac2f68cfacc65525e561977231be8209cbeb79b"))
        let s2 = UserIndex.streamHash(UserIndex.streamHash(.zero, leaf: fill(0x11)), leaf: fill(0x33))
        #expect(s2 == h("8e9ca6848c78601a7b127c9ded93a24f12af4fb899b60f0b2263bb87cd108038"))
        let ca = UserIndex.commitment(count: 2, streamHash: s2, last: 3)
        let cb = UserIndex.commitment(count: 1, streamHash: UserIndex.streamHash(.zero, leaf: fill(0x22)), last: 2)
        #expect(ca == h("e8ab545c17a5820cbec944f28d59bc0ecd2b521d91a8df1f037a3f4c1ea9c266"))
        #expect(cb == h("5c8c6721e2f028fc366c30c2f182d615646439a1ab9a41857dd8111dd1bab4a6"))
        let root = UserIndex.root(of: [(alice, ca), (bob, cb)])
        #expect(root == h("e30d8a66430c6dc632791df1be8fedec569ae16f125374e9f35fa82577e8e703"))
        var tree = UserIndexTree()
        tree.set(bob, commitment: cb)
        tree.set(alice, commitment: ca)
        let proof = tree.proof(for: alice)
        #expect(proof.siblings == [.zero, h("c738a8dcf3a7409cc27a2a2f6946a646d262f32b0c00a83fee0995e8bbd82d2a")])
        #expect(proof.verifies(key: alice, commitment: ca, root: root))
    }
}
