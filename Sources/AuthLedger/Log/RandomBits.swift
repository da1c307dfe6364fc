#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import Synchronization

/// Bits from the kernel's CSPRNG, fetched in blocks (a `getrandom` system call per
/// word was visible in the append profile).
package final class RandomBits: Sendable {
    package static let shared = RandomBits()
    private struct Pool: ~Copyable {
        var buffer = [UInt64](repeating: 0, count: 512)
        var next = 512
    }
    private let pool = Mutex(Pool())

    package func next2() -> (UInt64, UInt64) {
        take(2) { ($0[$0.startIndex], $0[$0.startIndex + 1]) }
    }

    /// `count` words (at most the pool's 512) taken under one lock: a decision's draws
    /// together, so that concurrent writers do not queue on the pool once per value.
    package func next(_ count: Int) -> [UInt64] { take(count) { Array($0) } }

    /// `body` over `count` fresh words of the pool, under its lock (no copy for `next2`).
    private func take<T>(_ count: Int, _ body: (ArraySlice<UInt64>) -> T) -> T {
        precondition(count > 0 && count <= 512)
        return pool.withLock { p in
            if p.next + count > p.buffer.count {
                // The kernel's CSPRNG, 256 bytes per getentropy call (swift-crypto's
                // SymmetricKey and SystemRandomNumberGenerator both make one call per word).
                p.buffer.withUnsafeMutableBytes { b in
                    var offset = 0
                    while offset < b.count {
                        let n = min(256, b.count - offset)
                        if getentropy(b.baseAddress! + offset, n) != 0 {
                            var g = SystemRandomNumberGenerator()
                            for k in stride(from: offset, to: offset + n, by: 8) { b.storeBytes(of: g.next(), toByteOffset: k, as: UInt64.self) }
                        }
                        offset += n
                    }
                }
                p.next = 0
            }
            p.next += count
            return body(p.buffer[(p.next - count)..<p.next])
        }
    }
}
