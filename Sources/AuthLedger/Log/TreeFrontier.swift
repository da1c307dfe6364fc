import AuthLedgerCore
import Crypto

/// The right edge of the Merkle tree: the hashes of its complete subtrees, largest
/// (leftmost) first, one per set bit of the size. Appending a leaf combines it with
/// the subtrees it completes, as a binary counter carries, and yields the new stored
/// hashes in stored-index order (`MerkleTree.storedHashIndex`).
struct TreeFrontier {
    /// 32 bytes held inline: the append path makes no array per hash.
    struct Node: Equatable {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        init(_ digest: SHA256.Digest) {
            withUnsafeMutableBytes(of: &words) { w in digest.withUnsafeBytes { w.copyMemory(from: $0) } }
        }

        init(_ bytes: UnsafeRawBufferPointer) {
            precondition(bytes.count == 32)
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
        }

        func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            try withUnsafeBytes(of: words) { try body($0) }
        }

        var hash: Hash32 { withBytes { Hash32(bytes: Array($0)) } }

        static func == (a: Node, b: Node) -> Bool { a.words == b.words }

        /// `SHA-256(0x01 ‖ left ‖ right)`.
        static func parent(_ left: Node, _ right: Node) -> Node {
            var sha = SHA256()
            withUnsafeBytes(of: UInt8(1)) { sha.update(bufferPointer: $0) }
            left.withBytes { sha.update(bufferPointer: $0) }
            right.withBytes { sha.update(bufferPointer: $0) }
            return Node(sha.finalize())
        }
    }

    private(set) var size: UInt64 = 0
    private var stack: [Node] = []

    init() {}

    /// The frontier of the stored tree of `size` leaves (popcount(size) reads).
    static func load(_ r: any StorageReader, size: UInt64) throws -> TreeFrontier {
        try load(size: size) { level, n in
            try r.withTreeHash(MerkleTree.storedHashIndex(level: level, n)) { b -> Node in
                guard let b, b.count == 32 else {
                    throw LedgerError(.tampered, "the Merkle tree has no hash for level \(level) node \(n)", seq: (n << UInt64(level)) + 1)
                }
                return Node(b)
            }
        }
    }

    /// The edge of a tree of `size` leaves whose complete subtrees `node(level, n)` gives
    /// (the log's, or the index log's: section 14).
    static func load(size: UInt64, _ node: (_ level: Int, _ n: UInt64) throws -> Node) rethrows -> TreeFrontier {
        var f = TreeFrontier()
        f.size = size
        var start: UInt64 = 0
        for level in stride(from: 63, through: 0, by: -1) where size & (UInt64(1) << UInt64(level)) != 0 {
            f.stack.append(try node(level, start >> UInt64(level)))
            start += UInt64(1) << UInt64(level)
        }
        return f
    }

    /// Appends a leaf hash; `store(index, level, node)` receives each new stored hash
    /// (the leaf, then the subtrees it completes) at consecutive stored indexes.
    mutating func append(_ leaf: SHA256.Digest, _ store: (UInt64, Int, Node) throws -> Void) rethrows {
        try append(Node(leaf), store)
    }

    mutating func append(_ leaf: Node, _ store: (UInt64, Int, Node) throws -> Void) rethrows {
        var h = leaf
        var index = MerkleTree.storedHashCount(size)
        try store(index, 0, h)
        var level = 0
        var n = size
        while n & 1 == 1 {
            h = Node.parent(stack.removeLast(), h)
            level += 1
            index += 1
            try store(index, level, h)
            n >>= 1
        }
        stack.append(h)
        size += 1
    }

    /// The root of the tree of `size` leaves.
    var root: Hash32 {
        guard var h = stack.last else { return MerkleTree.emptyRoot }
        for left in stack.dropLast().reversed() { h = Node.parent(left, h) }
        return h.hash
    }
}
