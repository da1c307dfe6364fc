/// An event id: a UUID, written in lower case.
public struct EventID: Hashable, Sendable, CustomStringConvertible {
    /// The first 8 bytes of the UUID, big-endian.
    public var high: UInt64
    /// The last 8 bytes of the UUID, big-endian.
    public var low: UInt64

    /// The id made of these 16 bytes.
    public init(high: UInt64, low: UInt64) { self.high = high; self.low = low }

    /// A version 7 UUID of these Unix milliseconds (48 bits) and random bits (74 of the
    /// 128 given are used). The core draws no randomness: the log draws the bits
    /// (`EventID.random()` in AuthLedger). Time-ordered ids make the id index append-mostly:
    /// a batch touches a few leaf pages instead of one random page per event, which is what a
    /// durable commit pays for.
    public init(version7 milliseconds: Int64, bits: (UInt64, UInt64)) {
        let ms = UInt64(max(0, milliseconds)) & 0xFFFF_FFFF_FFFF
        high = ms << 16 | 0x7000 | (bits.0 & 0x0FFF)
        low = (bits.1 & ~(UInt64(0xC) << 60)) | (UInt64(0x8) << 60)
    }

    /// Parses a UUID in its 36-character `8-4-4-4-12` form, hex digits in either case; nil for any other text.
    public init?(_ text: String) {
        let b = Array(text.utf8)
        guard b.count == 36, b[8] == 45, b[13] == 45, b[18] == 45, b[23] == 45 else { return nil }
        var h: UInt64 = 0, l: UInt64 = 0, n = 0
        for (k, c) in b.enumerated() where k != 8 && k != 13 && k != 18 && k != 23 {
            guard let d = hexValue(c) else { return nil }
            if n < 16 { h = h << 4 | UInt64(d) } else { l = l << 4 | UInt64(d) }
            n += 1
        }
        high = h
        low = l
    }

    /// The id in lower-case `8-4-4-4-12` form, as the recorded form writes it.
    public var description: String {
        let hex = hexString(high.bigEndianBytes8 + low.bigEndianBytes8)
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    package var bytes: [UInt8] { high.bigEndianBytes8 + low.bigEndianBytes8 }
}
