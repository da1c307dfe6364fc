/// RFC 4648 section 5 base64url without padding, as JOSE writes it (RFC 7515 section 2).
public enum Base64URL {
    /// The unpadded base64url text of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String { PersonalData.base64url(bytes) }

    private static let values: [UInt8] = {
        var t = [UInt8](repeating: 255, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() { t[Int(c)] = UInt8(i) }
        return t
    }()

    /// The bytes of unpadded base64url `text`; nil for padding, a character outside the
    /// alphabet, an impossible length or non-zero unused bits (so every byte string has
    /// exactly one accepted text).
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0, bits = 0
        for c in chars {
            let v = values[Int(c)]
            guard v != 255 else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        guard acc == 0 else { return nil }
        return out
    }
}
