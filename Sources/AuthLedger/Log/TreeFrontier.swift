import AuthLedgerCore
import CLibCrypto
import Crypto

/// The right edge of the Merkle tree: the hashes of its complete subtrees, largest
/// (leftmost) first, one per set bit of the size. Appending a leaf combines it with
/// the subtrees it completes, as a binary counter carries, and yields the new stored
/// hashes in stored-index order (`MerkleTree.storedHashIndex`).
struct TreeFrontier {
    /// 32 bytes held inline: the append path makes no array per hash.
    struct Node: Equatable {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        private init() {}

        init(_ digest: SHA256.Digest) {
            withUnsafeMutableBytes(of: &words) { w in digest.withUnsafeBytes { w.copyMemory(from: $0) } }
        }

        init(_ bytes: UnsafeRawBufferPointer) {
            precondition(bytes.count == 32)
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
        }

        func withUnsafeBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            try Swift.withUnsafeBytes(of: words) { try body($0) }
        }

        var hash: Hash32 { withUnsafeBytes { Hash32(bytes: Array($0)) } }

        /// SHA-256 of `a ‖ b ‖ c`, hashed by the system's libcrypto with its context on the
        /// stack: the log's per-event hashes (tree nodes, leaves recomputed from stored
        /// events, the chain's check, stream steps) go through here. swift-crypto's
        /// `SHA256` allocates, zeroes and frees a context object per hash, which cost a
        /// replay more than the compression (`Sources/CLibCrypto/shim.h`, docs/BENCHMARKS.md).
        static func sha256(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer = Node.none,
                           _ c: UnsafeRawBufferPointer = Node.none) -> Node {
            var node = Node()
            Swift.withUnsafeMutableBytes(of: &node.words) { out in
                authledger_sha256(a.baseAddress, a.count, b.baseAddress, b.count, c.baseAddress, c.count,
                                  out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            return node
        }

        /// The leaf of an event being appended (`RecordedEvent.leaf`), its canonical bytes written into `scratch`.
        static func leaf(_ e: Event, seq: UInt64, version: UInt64, scratch: inout [UInt8]) -> Node {
            CanonicalEvent.writeLeafInput(e, seq: seq, version: version, into: &scratch)
            return scratch.withUnsafeBytes { sha256($0) }
        }

        /// The event's `hash`, `SHA-256(prev ‖ leaf)` (`RecordedEvent.chain`).
        static func chain(prev: Hash32, leaf: Node) -> Hash32 {
            prev.bytes.withUnsafeBytes { p in leaf.withUnsafeBytes { sha256(p, $0) } }.hash
        }

        static var none: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

        static func == (a: Node, b: Node) -> Bool { a.words == b.words }

        /// `SHA-256(0x01 ‖ left ‖ right)`.
        static func parent(_ left: Node, _ right: Node) -> Node {
            Swift.withUnsafeBytes(of: UInt8(1)) { one in left.withUnsafeBytes { l in right.withUnsafeBytes { r in sha256(one, l, r) } } }
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
