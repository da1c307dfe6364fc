import AuthLedgerCore
import Crypto

/// The log as an RFC 9162 (RFC 6962) Merkle tree: leaf `i` is the event with `seq = i + 1`,
/// its leaf hash the chain's `leaf` (`SHA-256(0x00 ‖ C)`), interior nodes
/// `SHA-256(0x01 ‖ left ‖ right)`.
///
/// The store keeps the hash of every complete subtree, in the order Go's
/// `golang.org/x/mod/sumdb/tlog` stores them (`StoredHashIndex`): appending leaf `n`
/// writes its leaf hash and the hashes of the subtrees it completes, at consecutive
/// indexes after every earlier one (two per append on average, always at the end of
/// the index). The root of any size and every proof node then come from O(log n) reads.
/// The index arithmetic and proof recursions are written here (no Swift library does
/// RFC 6962 trees over a custom store); they follow RFC 9162 sections 2.1.3–2.1.4 and are
/// checked against Go's tlog in the interoperability test.
public enum MerkleTree {
    /// `SHA-256(0x01 ‖ left ‖ right)`.
    public static func nodeHash(_ left: Hash32, _ right: Hash32) -> Hash32 {
        withUnsafeBytes(of: UInt8(1)) { one in
            left.bytes.withUnsafeBytes { l in right.bytes.withUnsafeBytes { r in TreeFrontier.Node.sha256(one, l, r).hash } }
        }
    }

    /// `SHA-256(0x00 ‖ entry)`: the leaf hash of an entry `C`.
    public static func leafHash(_ entry: [UInt8]) -> Hash32 {
        withUnsafeBytes(of: UInt8(0)) { zero in entry.withUnsafeBytes { TreeFrontier.Node.sha256(zero, $0).hash } }
    }

    /// The root of the empty tree: `SHA-256()` (RFC 9162 2.1.1).
    public static let emptyRoot = Hash32(bytes: Array(SHA256.hash(data: [UInt8]())))

    // MARK: Stored hash indexing (tlog's)

    /// Where the hash of the `n`-th node (0-based) of `level` is stored: level L's n-th
    /// hash comes right after level L+1's (2n+1)-th, and level 0's n-th at
    /// n + n/2 + n/4 + … (Go: `tlog.StoredHashIndex`).
    public static func storedHashIndex(level: Int, _ n: UInt64) -> UInt64 {
        var n = n
        for _ in 0..<level { n = 2 * n + 1 }
        var i: UInt64 = 0
        while n > 0 { i += n; n >>= 1 }
        return i + UInt64(level)
    }

    /// How many hashes a tree of `n` leaves stores (Go: `tlog.StoredHashCount`).
    public static func storedHashCount(_ n: UInt64) -> UInt64 {
        if n == 0 { return 0 }
        var count = storedHashIndex(level: 0, n - 1) + 1
        var i = n - 1
        while i & 1 != 0 { count += 1; i >>= 1 }
        return count
    }

    /// Level and index of a stored hash index (Go: `tlog.SplitStoredHashIndex`).
    public static func splitStoredHashIndex(_ index: UInt64) -> (level: Int, n: UInt64) {
        // storedHashIndex(0, n) < 2n, so n is in [index/2, index/2 + log2(index)].
        var n = index / 2
        var indexN = storedHashIndex(level: 0, n)
        while true {
            let x = indexN + 1 + UInt64((n + 1).trailingZeroBitCount)
            if x > index { break }
            n += 1
            indexN = x
        }
        let level = Int(index - indexN)
        return (level, n >> UInt64(level))
    }

    /// The largest power of two strictly less than `n` (n ≥ 2).
    static func split(_ n: UInt64) -> UInt64 {
        UInt64(1) << UInt64(63 - (n - 1).leadingZeroBitCount)
    }

    // MARK: Proofs over stored hashes

    /// Reads stored hashes (by stored index) for proofs and roots.
    public struct Reader {
        let read: (UInt64) throws -> Hash32

        /// A reader over `read`, which returns the stored hash at a stored index (and throws when the store does).
        public init(_ read: @escaping (UInt64) throws -> Hash32) { self.read = read }

        /// The hash of the complete subtree at `level`, `n`.
        public func hash(level: Int, _ n: UInt64) throws -> Hash32 {
            try read(MerkleTree.storedHashIndex(level: level, n))
        }

        /// The Merkle tree hash of leaves `[lo, hi)`, for the ranges RFC 6962's
        /// recursion produces (`lo` a multiple of a power of two ≥ `hi − lo`): the
        /// complete subtrees it is made of, folded from the right.
        public func subtree(_ lo: UInt64, _ hi: UInt64) throws -> Hash32 {
            precondition(lo < hi)
            var parts: [Hash32] = []
            var start = lo
            while start < hi {
                var level = 63 - (hi - start).leadingZeroBitCount
                while level > 0 && start & ((UInt64(1) << UInt64(level)) - 1) != 0 { level -= 1 }
                parts.append(try hash(level: level, start >> UInt64(level)))
                start += UInt64(1) << UInt64(level)
            }
            var h = parts.removeLast()
            while let left = parts.popLast() { h = MerkleTree.nodeHash(left, h) }
            return h
        }

        /// The root of the tree of the first `n` leaves.
        public func root(_ n: UInt64) throws -> Hash32 {
            n == 0 ? MerkleTree.emptyRoot : try subtree(0, n)
        }

        /// RFC 9162 2.1.3.1 `PATH(m, D[n])`: the audit path of leaf `m` in the tree of `n`
        /// leaves, from the leaf's sibling up.
        public func inclusionProof(_ m: UInt64, _ n: UInt64) throws -> [Hash32] {
            precondition(m < n)
            var proof: [Hash32] = []
            var lo: UInt64 = 0, hi = n
            while hi - lo > 1 {
                let k = MerkleTree.split(hi - lo)
                if m < lo + k {
                    proof.append(try subtree(lo + k, hi))
                    hi = lo + k
                } else {
                    proof.append(try subtree(lo, lo + k))
                    lo += k
                }
            }
            return proof.reversed()
        }

        /// RFC 9162 2.1.4.1 `PROOF(m, D[n])`: the consistency proof from size `m` to `n`
        /// (1 ≤ m ≤ n; empty when they are equal).
        public func consistencyProof(_ m: UInt64, _ n: UInt64) throws -> [Hash32] {
            precondition(m >= 1 && m <= n)
            var proof: [Hash32] = []
            var lo: UInt64 = 0, hi = n, complete = true
            while true {
                if m == hi {
                    if !complete { proof.append(try subtree(lo, hi)) }
                    break
                }
                let k = MerkleTree.split(hi - lo)
                if m <= lo + k {
                    proof.append(try subtree(lo + k, hi))
                    hi = lo + k
                } else {
                    proof.append(try subtree(lo, lo + k))
                    lo += k
                    complete = false
                }
            }
            return proof.reversed()
        }
    }

    // MARK: Verification (RFC 9162 2.1.3.2 and 2.1.4.2)

    /// Whether `proof` shows the leaf `leafHash` at `index` in the tree of `size` with `root`.
    public static func verifyInclusion(leafHash: Hash32, index: UInt64, size: UInt64, proof: [Hash32], root: Hash32) -> Bool {
        guard index < size else { return false }
        var fn = index, sn = size - 1, r = leafHash
        for p in proof {
            if sn == 0 { return false }
            if fn & 1 == 1 || fn == sn {
                r = nodeHash(p, r)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 { fn >>= 1; sn >>= 1 }
                }
            } else {
                r = nodeHash(r, p)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 && r == root
    }

    /// Whether `proof` shows the tree of `newSize` with `newRoot` extends the one of `oldSize` with `oldRoot`.
    public static func verifyConsistency(oldSize: UInt64, oldRoot: Hash32, newSize: UInt64, newRoot: Hash32, proof: [Hash32]) -> Bool {
        guard oldSize >= 1, oldSize <= newSize else { return false }
        if oldSize == newSize { return proof.isEmpty && oldRoot == newRoot }
        var path = proof
        if oldSize & (oldSize - 1) == 0 { path.insert(oldRoot, at: 0) }
        guard !path.isEmpty else { return false }
        var fn = oldSize - 1, sn = newSize - 1
        while fn & 1 == 1 { fn >>= 1; sn >>= 1 }
        var fr = path[0], sr = path[0]
        for c in path.dropFirst() {
            if sn == 0 { return false }
            if fn & 1 == 1 || fn == sn {
                fr = nodeHash(c, fr)
                sr = nodeHash(c, sr)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 { fn >>= 1; sn >>= 1 }
                }
            } else {
                sr = nodeHash(sr, c)
            }
            fn >>= 1
            sn >>= 1
        }
        return fr == oldRoot && sr == newRoot && sn == 0
    }
}
