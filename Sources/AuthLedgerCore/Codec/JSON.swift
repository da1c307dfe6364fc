/// A JSON value with ordered object members.
///
/// The ledger parses input strictly (RFC 8259: no duplicate keys, valid UTF-8, no
/// lone surrogates) and writes two forms: `serialized()` keeps member order (answers),
/// `canonical()` is RFC 8785 (JCS), used for hashing.
public enum JSON: Equatable, Sendable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written as an integer that fits in `Int64`.
    case int(Int64)
    /// A number that is not an integer in Int64 range, kept as its literal text.
    case number(String)
    /// A string.
    case string(String)
    /// An array, in order.
    case array([JSON])
    /// An object: its members in their given order (the parser refuses duplicate names).
    case object([(String, JSON)])

    /// Structural equality in which the order of object members counts (`.int(1)` and `.number("1.0")` differ).
    public static func == (a: JSON, b: JSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.number(x), .number(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The value of member `key` of an object; nil when absent or when this is not an object.
    public subscript(key: String) -> JSON? {
        if case let .object(members) = self { return members.first { $0.0 == key }?.1 }
        return nil
    }

    /// The string, if this is a string; nil otherwise.
    public var stringValue: String? { if case let .string(s) = self { return s }; return nil }
    /// The integer, if this is an integer in `Int64` range; nil otherwise.
    public var intValue: Int64? { if case let .int(i) = self { return i }; return nil }
    /// The boolean, if this is `true` or `false`; nil otherwise.
    public var boolValue: Bool? { if case let .bool(b) = self { return b }; return nil }
    /// The elements, if this is an array; nil otherwise.
    public var arrayValue: [JSON]? { if case let .array(a) = self { return a }; return nil }
    /// The members in order, if this is an object; nil otherwise.
    public var objectValue: [(String, JSON)]? { if case let .object(o) = self { return o }; return nil }
}

// MARK: - Writing

extension JSON {
    /// Compact JSON, members in their given order.
    public func serialized() -> String {
        var out = [UInt8]()
        out.reserveCapacity(256)
        write(into: &out, canonical: false)
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 8785 canonical bytes: members sorted by UTF-16 code units, no white space.
    public func canonicalBytes() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(256)
        write(into: &out, canonical: true)
        return out
    }

    /// The RFC 8785 canonical form as a string (see ``JSON/canonicalBytes()``).
    public func canonical() -> String { String(decoding: canonicalBytes(), as: UTF8.self) }

    /// The bytes of `serialized()`, without the detour through a `String` (the server's answers).
    package func serializedBytes(reserving capacity: Int = 256) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(capacity)
        write(into: &out, canonical: false)
        return out
    }

    func write(into out: inout [UInt8], canonical: Bool) {
        switch self {
        case .null: out.append(contentsOf: [110, 117, 108, 108])
        case .bool(true): out.append(contentsOf: [116, 114, 117, 101])
        case .bool(false): out.append(contentsOf: [102, 97, 108, 115, 101])
        case let .int(i): out.append(contentsOf: String(i).utf8)
        case let .number(n): out.append(contentsOf: n.utf8)
        case let .string(s): JSON.writeString(s, into: &out)
        case let .array(items):
            out.append(91)
            for (k, item) in items.enumerated() {
                if k > 0 { out.append(44) }
                item.write(into: &out, canonical: canonical)
            }
            out.append(93)
        case let .object(members):
            out.append(123)
            let ordered = canonical ? members.sorted { JSON.utf16Less($0.0, $1.0) } : members
            for (k, (key, value)) in ordered.enumerated() {
                if k > 0 { out.append(44) }
                JSON.writeString(key, into: &out)
                out.append(58)
                value.write(into: &out, canonical: canonical)
            }
            out.append(125)
        }
    }

    static func utf16Less(_ a: String, _ b: String) -> Bool {
        a.utf16.lexicographicallyPrecedes(b.utf16)
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// JSON string escaping as ECMAScript's JSON.stringify does it (what JCS requires).
    static func writeString(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { writeString(utf8: UnsafeRawBufferPointer($0), into: &out) }
    }

    /// `writeString` of a string's UTF-8 bytes (valid UTF-8: the caller's to check).
    package static func writeString(utf8 u: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        out.append(34)
        // Nearly every string needs no escaping: copy it in one go.
        if !u.contains(where: { $0 < 32 || $0 == 34 || $0 == 92 }) {
            out.append(contentsOf: u)
            out.append(34)
            return
        }
        for c in u {
            switch c {
            case 34: out.append(92); out.append(34)
            case 92: out.append(92); out.append(92)
            case 8: out.append(92); out.append(98)
            case 12: out.append(92); out.append(102)
            case 10: out.append(92); out.append(110)
            case 13: out.append(92); out.append(114)
            case 9: out.append(92); out.append(116)
            case 0..<32:
                out.append(contentsOf: [92, 117, 48, 48, hex[Int(c >> 4)], hex[Int(c & 15)]])
            default: out.append(c)
            }
        }
        out.append(34)
    }
}

// MARK: - Parsing
