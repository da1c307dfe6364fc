/// The value of one hex digit (`0-9a-f`, and `A-F` unless `lowerOnly`); nil for any other
/// byte. The package's one hex decoder (hashes, ids, percent escapes).
package func hexValue(_ c: UInt8, lowerOnly: Bool = false) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F") where !lowerOnly: return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}

/// Lower-case hex of `bytes`: the package's one hex encoder (hashes, ids, tokens), written
/// straight into the string's UTF-8 storage (it is on the path of every recorded event).
package func hexString(_ bytes: some Collection<UInt8>) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 2) { out in
        var i = 0
        for b in bytes {
            out[i] = hexDigitASCII(b >> 4)
            out[i + 1] = hexDigitASCII(b & 15)
            i += 2
        }
        return i
    }
}

@inline(__always) private func hexDigitASCII(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
}

extension UInt64 {
    package var bigEndianBytes8: [UInt8] { withUnsafeBytes(of: bigEndian) { Array($0) } }
}
