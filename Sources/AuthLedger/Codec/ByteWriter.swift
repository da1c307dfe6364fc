import AuthLedgerCore

/// Appends the compact binary storage encoding: LEB128 varints, zig-zag for signed
/// values, length-prefixed UTF-8 strings.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 128) { bytes.reserveCapacity(capacity) }

    /// A writer over `buffer`'s storage (emptied, its capacity kept); `buffer` is left empty.
    init(reusing buffer: inout [UInt8]) {
        swap(&bytes, &buffer)
        bytes.removeAll(keepingCapacity: true)
        bytes.reserveCapacity(512)
    }

    @inline(__always) mutating func u8(_ v: UInt8) { bytes.append(v) }

    @inline(__always) mutating func varint(_ v: UInt64) {
        var x = v
        while x >= 0x80 { bytes.append(UInt8(x & 0x7F) | 0x80); x >>= 7 }
        bytes.append(UInt8(x))
    }

    @inline(__always) mutating func signed(_ v: Int64) { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }

    @inline(__always) mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            varint(UInt64(buf.count))
            bytes.append(contentsOf: buf)
        }
    }

    mutating func optString(_ s: String?) {
        if let s { u8(1); string(s) } else { u8(0) }
    }

    mutating func time(_ t: Timestamp) { signed(t.milliseconds) }

    mutating func optTime(_ t: Timestamp?) {
        if let t { u8(1); time(t) } else { u8(0) }
    }

    mutating func raw(_ b: [UInt8]) { bytes.append(contentsOf: b) }

    mutating func map(_ m: StringMap) {
        varint(UInt64(m.pairs.count))
        for (k, v) in m.pairs { string(k); string(v) }
    }
}
