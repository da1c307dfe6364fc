/// A JSON tree encodes as itself (members in their order), so a typed answer that is
/// `Encodable` through its ``JSON`` form writes the same document with any `Encoder`.
extension JSON {
    /// `.string(s)`, or `.null` for nil.
    public static func optional(_ s: String?) -> JSON { s.map { .string($0) } ?? .null }
}

extension JSON: Encodable {
    private struct Key: CodingKey {
        let stringValue: String
        init(_ s: String) { stringValue = s }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// Encodes the value as itself: objects keep their member order, integers stay integers.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case let .bool(b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case let .int(i):
            var c = encoder.singleValueContainer()
            try c.encode(i)
        case let .number(text):
            // Kept as its literal text by the parser; a Double is the closest an Encoder takes.
            var c = encoder.singleValueContainer()
            try c.encode(Double(text) ?? 0)
        case let .string(s):
            var c = encoder.singleValueContainer()
            try c.encode(s)
        case let .array(items):
            var c = encoder.unkeyedContainer()
            for item in items { try c.encode(item) }
        case let .object(members):
            var c = encoder.container(keyedBy: Key.self)
            for (k, v) in members { try c.encode(v, forKey: Key(k)) }
        }
    }
}
