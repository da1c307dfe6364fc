import AuthLedgerCore

/// Reads what `ByteWriter` wrote; every read is bounds-checked (storage may be corrupt).
struct ByteReader {
    let base: UnsafeRawBufferPointer
    var i = 0

    init(_ base: UnsafeRawBufferPointer) { self.base = base }

    struct Corrupt: Error {}

    @inline(__always) mutating func u8() throws -> UInt8 {
        guard i < base.count else { throw Corrupt() }
        defer { i += 1 }
        return base[i]
    }

    /// A presence flag or a boolean: exactly 0 or 1. Any other byte is corrupt, so that
    /// every stored value has one encoding and a flipped flag byte cannot decode to the
    /// same event (verify names it instead of passing it).
    @inline(__always) mutating func flag() throws -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        default: throw Corrupt()
        }
    }

    @inline(__always) mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard i < base.count, shift < 64 else { throw Corrupt() }
            let b = base[i]
            i += 1
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
    }

    @inline(__always) mutating func signed() throws -> Int64 {
        let u = try varint()
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    /// A length or count that fits in what is left of the input (a corrupt varint may hold any
    /// 64-bit value: converting it to `Int` unchecked, or adding it to the offset, would trap).
    @inline(__always) mutating func length() throws -> Int {
        let v = try varint()
        guard v <= UInt64(base.count - i) else { throw Corrupt() }
        return Int(v)
    }

    mutating func string() throws -> String {
        let n = try length()
        defer { i += n }
        let bytes = UnsafeRawBufferPointer(rebasing: base[i..<(i + n)])
        // ASCII (ids, names, times: nearly everything) needs no validation beyond the
        // high bit; the generic validating initialiser was a tenth of replay's time.
        var high: UInt8 = 0
        for b in bytes { high |= b }
        if high < 0x80 { return String(decoding: bytes, as: UTF8.self) }
        guard let s = String(validating: bytes, as: UTF8.self) else { throw Corrupt() }
        return s
    }

    /// A count of following items, each at least one byte long.
    mutating func count() throws -> Int { try length() }

    mutating func skip(_ n: Int) throws {
        guard i + n <= base.count else { throw Corrupt() }
        i += n
    }

    mutating func bigEndianUInt64() throws -> UInt64 {
        guard i + 8 <= base.count else { throw Corrupt() }
        defer { i += 8 }
        return base.loadUnaligned(fromByteOffset: i, as: UInt64.self).bigEndian
    }

    mutating func optString() throws -> String? { try flag() ? try string() : nil }
    /// A time in the range RFC 3339 can write (formatting one outside it would trap).
    mutating func time() throws -> Timestamp {
        let ms = try signed()
        guard ms >= Timestamp.min.milliseconds, ms <= Timestamp.max.milliseconds else { throw Corrupt() }
        return Timestamp(milliseconds: ms)
    }
    mutating func optTime() throws -> Timestamp? { try flag() ? try time() : nil }

    mutating func raw(_ n: Int) throws -> [UInt8] {
        guard n <= base.count - i else { throw Corrupt() }
        defer { i += n }
        return Array(base[i..<(i + n)])
    }

    mutating func map() throws -> StringMap {
        let n = try length()
        guard n <= 1024 else { throw Corrupt() }
        var m = StringMap()
        m.pairs.reserveCapacity(n)
        for _ in 0..<n { m.pairs.append((try string(), try string())) }
        return m
    }

    var atEnd: Bool { i == base.count }
}
