extension JSON {
    /// An integer member: a plain integer, or a number written with a zero fraction
    /// (`576.0`), which JSON — and JSON Schema's `integer` — count as the same integer.
    /// nil for anything else (a fraction, an exponent, out of Int64 range).
    public var integralValue: Int64? {
        switch self {
        case let .int(i): return i
        case let .number(text):
            guard let dot = text.firstIndex(of: "."), text[text.index(after: dot)...].allSatisfy({ $0 == "0" }),
                  text.index(after: dot) != text.endIndex else { return nil }
            return Int64(text[..<dot])
        default: return nil
        }
    }
}

extension UInt64 {
    /// A position a caller sends as text (a query parameter, `Last-Event-ID`): ASCII digits
    /// only (no sign, no space), at most the largest UInt64; nil otherwise.
    public init?(positionText text: some StringProtocol) {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let v = UInt64(text) else { return nil }
        self = v
    }
}
