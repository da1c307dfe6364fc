import Crypto

/// The verifiable index of every user's stream (reference section 14): a binary prefix tree
/// over the users with events, after KEYTRANS's prefix-tree hashing.
///
/// - key `k(U) = SHA-256("authledger/user-index/v1:" ‖ UTF-8(U))`, read bit by bit from the
///   most significant bit of its first byte;
/// - value commitment `c(U) = SHA-256(u64be(N) ‖ s_N ‖ u64be(last))`, with `s_N` the stream
///   hash after the user's N events and `last` the seq of the newest;
/// - a leaf `SHA-256(0x02 ‖ k ‖ c)`, an inner node `SHA-256(0x03 ‖ left ‖ right)`, an empty
///   subtree 32 zero bytes, and a subtree holding exactly one leaf is that leaf's hash (a leaf
///   sits at the first depth where its key's prefix is unique).
public enum UserIndex {
    /// The domain prefix of a user's key.
    public static let keyPrefix = Array("authledger/user-index/v1:".utf8)

    /// `k(U)`: where user `user` sits in the tree.
    public static func key(_ user: String) -> Hash32 {
        var h = SHA256()
        h.update(data: keyPrefix)
        h.update(data: Array(user.utf8))
        return Hash32(bytes: Array(h.finalize()))
    }

    /// `s_k = SHA-256(s_{k-1} ‖ leaf_k)`: the stream hash after one more event (`s_0` is zero).
    public static func streamHash(_ previous: Hash32, leaf: Hash32) -> Hash32 {
        var h = SHA256()
        h.update(data: previous.bytes)
        h.update(data: leaf.bytes)
        return Hash32(bytes: Array(h.finalize()))
    }

    /// `c(U) = SHA-256(u64be(N) ‖ s_N ‖ u64be(last))`.
    public static func commitment(count: UInt64, streamHash: Hash32, last: UInt64) -> Hash32 {
        var h = SHA256()
        h.update(data: bigEndian(count))
        h.update(data: streamHash.bytes)
        h.update(data: bigEndian(last))
        return Hash32(bytes: Array(h.finalize()))
    }

    /// `SHA-256(0x02 ‖ k ‖ c)`.
    public static func leafHash(key: Hash32, commitment: Hash32) -> Hash32 {
        var h = SHA256()
        h.update(data: [0x02])
        h.update(data: key.bytes)
        h.update(data: commitment.bytes)
        return Hash32(bytes: Array(h.finalize()))
    }

    /// `SHA-256(0x03 ‖ left ‖ right)`.
    public static func nodeHash(_ left: Hash32, _ right: Hash32) -> Hash32 {
        var h = SHA256()
        h.update(data: [0x03])
        h.update(data: left.bytes)
        h.update(data: right.bytes)
        return Hash32(bytes: Array(h.finalize()))
    }

    /// Bit `i` of `key`, from the most significant bit of its first byte.
    @inlinable public static func bit(_ key: Hash32, _ i: Int) -> Int { Int(key.bytes[i >> 3] >> (7 - UInt8(i & 7))) & 1 }

    static func bigEndian(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * UInt64($0))) } }

    /// The root of the tree over `leaves` computed from scratch, by splitting the sorted keys
    /// on each bit: the definition, written as plainly as it reads (the incremental
    /// ``UserIndexTree`` must agree with it).
    public static func root(of leaves: [(key: Hash32, commitment: Hash32)]) -> Hash32 {
        let sorted = leaves.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        func subtree(_ part: ArraySlice<(key: Hash32, commitment: Hash32)>, depth: Int) -> Hash32 {
            if part.isEmpty { return .zero }
            if part.count == 1 { return leafHash(key: part.first!.key, commitment: part.first!.commitment) }
            let split = part.firstIndex { bit($0.key, depth) == 1 } ?? part.endIndex
            return nodeHash(subtree(part[..<split], depth: depth + 1), subtree(part[split...], depth: depth + 1))
        }
        return subtree(sorted[...], depth: 0)
    }
}

/// A proof of where a key stands in the index: the siblings from the root down to where the
/// key's path ends, and what is there — its leaf (inclusion, or another key's leaf sharing the
/// path: non-inclusion) or an empty subtree (non-inclusion).
public struct UserIndexProof: Sendable, Equatable {
    /// What the key's path ends at.
    public enum Terminal: Sendable, Equatable {
        /// A leaf: the key's own (inclusion) or another whose key shares the path (non-inclusion).
        case leaf(key: Hash32, commitment: Hash32)
        /// An empty subtree: no key has the path's prefix.
        case empty
    }

    /// The sibling hashes from the root down.
    public var siblings: [Hash32]
    /// What the path ends at.
    public var terminal: Terminal

    /// A proof of these parts.
    public init(siblings: [Hash32], terminal: Terminal) {
        self.siblings = siblings
        self.terminal = terminal
    }

    /// The commitment the proof shows for `key`: nil when it proves the key absent.
    public func commitment(for key: Hash32) -> Hash32? {
        if case let .leaf(k, c) = terminal, k == key { return c }
        return nil
    }

    /// The root the proof folds up to for `key`; nil when the proof cannot be one for `key` (a
    /// leaf off the key's path, more than 256 levels).
    public func root(for key: Hash32) -> Hash32? {
        let depth = siblings.count
        guard depth <= 256 else { return nil }
        var h: Hash32
        switch terminal {
        case .empty:
            h = .zero
        case let .leaf(k, c):
            for i in 0..<depth where UserIndex.bit(k, i) != UserIndex.bit(key, i) { return nil }
            h = UserIndex.leafHash(key: k, commitment: c)
        }
        for i in stride(from: depth - 1, through: 0, by: -1) {
            h = UserIndex.bit(key, i) == 0 ? UserIndex.nodeHash(h, siblings[i]) : UserIndex.nodeHash(siblings[i], h)
        }
        return h
    }

    /// Whether the proof shows `key` with `commitment` (nil: absent) in the index whose root is `root`.
    public func verifies(key: Hash32, commitment: Hash32?, root: Hash32) -> Bool {
        self.root(for: key) == root && self.commitment(for: key) == commitment
    }
}

/// The index kept in memory and updated in batches: each changed user's path rehashed once
/// however many of a batch's users share it. Users are only ever added or updated (an erasure
/// changes no stream hash), so the tree only grows.
public struct UserIndexTree: Sendable {
    // Nodes in flat arrays: a leaf holds `leaf >= 0` (an index into keys/commitments); an inner
    // node its two children (-1: an empty subtree). Hashes 32 bytes a node in one buffer.
    private var left: [Int32] = []
    private var right: [Int32] = []
    private var leafOf: [Int32] = []
    private var dirty: [Bool] = []
    private var hashes: [UInt8] = []
    private var keys: [Hash32] = []
    private var commitments: [Hash32] = []
    private var rootNode: Int32 = -1
    private var rootHash = Hash32.zero
    private var changed = false

    /// An empty index.
    public init() {}

    /// How many users the index holds.
    public var count: Int { keys.count }

    private mutating func newNode(left l: Int32 = -1, right r: Int32 = -1, leaf: Int32 = -1) -> Int32 {
        left.append(l)
        right.append(r)
        leafOf.append(leaf)
        dirty.append(true)
        hashes.append(contentsOf: repeatElement(0, count: 32))
        return Int32(left.count - 1)
    }

    private mutating func newLeaf(_ key: Hash32, _ commitment: Hash32) -> Int32 {
        keys.append(key)
        commitments.append(commitment)
        return newNode(leaf: Int32(keys.count - 1))
    }

    /// Sets `key`'s commitment (adding the key when new); the root is rehashed when next read.
    public mutating func set(_ key: Hash32, commitment: Hash32) {
        changed = true
        guard rootNode >= 0 else { rootNode = newLeaf(key, commitment); return }
        var parent: Int32 = -1, parentBit = 0
        var n = rootNode
        var depth = 0
        while true {
            dirty[Int(n)] = true
            let leaf = leafOf[Int(n)]
            if leaf >= 0 {
                let other = keys[Int(leaf)]
                if other == key { commitments[Int(leaf)] = commitment; return }
                // Split: inner nodes down to the first bit where the two keys differ.
                let fresh = newLeaf(key, commitment)
                var d = depth
                while UserIndex.bit(key, d) == UserIndex.bit(other, d) { d += 1 }
                var sub = UserIndex.bit(key, d) == 0 ? newNode(left: fresh, right: n) : newNode(left: n, right: fresh)
                while d > depth {
                    d -= 1
                    sub = UserIndex.bit(key, d) == 0 ? newNode(left: sub) : newNode(right: sub)
                }
                replace(parent, parentBit, with: sub)
                return
            }
            let b = UserIndex.bit(key, depth)
            let child = b == 0 ? left[Int(n)] : right[Int(n)]
            if child < 0 {
                let fresh = newLeaf(key, commitment)
                if b == 0 { left[Int(n)] = fresh } else { right[Int(n)] = fresh }
                return
            }
            parent = n
            parentBit = b
            n = child
            depth += 1
        }
    }

    private mutating func replace(_ parent: Int32, _ bit: Int, with node: Int32) {
        if parent < 0 { rootNode = node } else if bit == 0 { left[Int(parent)] = node } else { right[Int(parent)] = node }
    }

    private func hash(_ n: Int32) -> Hash32 {
        n < 0 ? .zero : Hash32(bytes: Array(hashes[Int(n) * 32 ..< Int(n) * 32 + 32]))
    }

    private mutating func rehash(_ n: Int32) {
        guard n >= 0, dirty[Int(n)] else { return }
        let h: Hash32
        let leaf = leafOf[Int(n)]
        if leaf >= 0 {
            h = UserIndex.leafHash(key: keys[Int(leaf)], commitment: commitments[Int(leaf)])
        } else {
            rehash(left[Int(n)])
            rehash(right[Int(n)])
            h = UserIndex.nodeHash(hash(left[Int(n)]), hash(right[Int(n)]))
        }
        hashes.replaceSubrange(Int(n) * 32 ..< Int(n) * 32 + 32, with: h.bytes)
        dirty[Int(n)] = false
    }

    /// The root `I`: 32 zero bytes for an empty index.
    public mutating func root() -> Hash32 {
        if changed {
            rehash(rootNode)
            rootHash = hash(rootNode)
            changed = false
        }
        return rootHash
    }

    /// The proof for `key` against ``root()``: inclusion when the key is in the index,
    /// non-inclusion otherwise.
    public mutating func proof(for key: Hash32) -> UserIndexProof {
        _ = root()
        var siblings: [Hash32] = []
        var n = rootNode
        var depth = 0
        while n >= 0 {
            let leaf = leafOf[Int(n)]
            if leaf >= 0 { return UserIndexProof(siblings: siblings, terminal: .leaf(key: keys[Int(leaf)], commitment: commitments[Int(leaf)])) }
            let b = UserIndex.bit(key, depth)
            siblings.append(hash(b == 0 ? right[Int(n)] : left[Int(n)]))
            n = b == 0 ? left[Int(n)] : right[Int(n)]
            depth += 1
        }
        return UserIndexProof(siblings: siblings, terminal: .empty)
    }
}
