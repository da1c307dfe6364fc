/// A SHA-256 value.
public struct Hash32: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes of the hash.
    public var bytes: [UInt8]
    /// The hash made of these bytes; `bytes` must hold exactly 32 (a precondition).
    public init(bytes: [UInt8]) {
        precondition(bytes.count == 32)
        self.bytes = bytes
    }
    /// 32 zero bytes: the `prev` of the event at `seq` 1.
    public static let zero = Hash32(bytes: [UInt8](repeating: 0, count: 32))

    /// Parses 64 lower-case hex digits; nil for anything else (upper case included).
    public init?(hex: String) {
        let b = Array(hex.utf8)
        guard b.count == 64 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        for k in 0..<32 {
            // Lower case only: the recorded form is lower-case hex.
            guard let hi = hexValue(b[2 * k], lowerOnly: true), let lo = hexValue(b[2 * k + 1], lowerOnly: true) else { return nil }
            out[k] = hi << 4 | lo
        }
        bytes = out
    }

    /// The hash as 64 lower-case hex digits.
    public var description: String { hexString(bytes) }
}
