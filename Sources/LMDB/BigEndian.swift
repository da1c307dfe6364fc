import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension UnsafeRawBufferPointer {
    /// Reads a big-endian UInt64 at `offset`.
    @inline(__always)
    public func loadBigEndianUInt64(at offset: Int = 0) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}

extension UInt64 {
    /// The 8 big-endian bytes, so keys sort numerically in LMDB.
    @inline(__always)
    public var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: self.bigEndian) { Array($0) }
    }
}
