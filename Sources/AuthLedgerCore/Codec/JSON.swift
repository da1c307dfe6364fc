/// A JSON value with ordered object members.
///
/// The ledger parses input strictly (RFC 8259: no duplicate keys, valid UTF-8, no
/// lone surrogates) and writes two forms: `serialized()` keeps member order (answers),
/// `canonical()` is RFC 8785 (JCS), used for hashing.
public enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// A number written as an integer that fits in `Int64`.
    case int(Int64)
    /// A number that is not an integer in Int64 range, kept as its literal text.
    case number(String)
    case string(String)
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
        out.append(34)
        // Nearly every string needs no escaping: copy it in one go.
        var s = s
        let plain = s.withUTF8 { u -> Bool in
            for c in u where c < 32 || c == 34 || c == 92 { return false }
            out.append(contentsOf: u)
            return true
        }
        if plain { out.append(34); return }
        for c in s.utf8 {
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

/// Why a text is not acceptable JSON.
public struct JSONParseError: Error, CustomStringConvertible, Sendable {
    /// What is wrong (`unexpected end of input`, `nesting too deep`, …).
    public let message: String
    /// The byte offset in the input where the parser stopped.
    public let offset: Int
    /// The message with its byte offset.
    public var description: String { "\(message) at byte \(offset)" }
}

extension JSON {
    /// Parses one JSON document from UTF-8 bytes; trailing white space only.
    /// Throws ``JSONParseError`` for text that is not strict JSON or nests deeper than `maxDepth`.
    public static func parse<C: Collection>(_ bytes: C, maxDepth: Int = 32) throws -> JSON where C.Element == UInt8 {
        var parser = JSONParser(bytes: Array(bytes), maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses one JSON document from a string, as ``JSON/parse(_:maxDepth:)`` does from its UTF-8 bytes.
    public static func parse(_ text: String) throws -> JSON { try parse(Array(text.utf8)) }
}

struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    var i = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    func fail(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: i) }

    mutating func skipWhitespace() {
        while i < bytes.count, bytes[i] == 32 || bytes[i] == 9 || bytes[i] == 10 || bytes[i] == 13 { i += 1 }
    }

    mutating func parseDocument() throws -> JSON {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard i == bytes.count else { throw fail("unexpected trailing characters") }
        return value
    }

    mutating func parseValue(depth: Int) throws -> JSON {
        guard depth <= maxDepth else { throw fail("nesting too deep") }
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case 123: return try parseObject(depth: depth)
        case 91: return try parseArray(depth: depth)
        case 34: return .string(try parseString())
        case 116: try literal("true"); return .bool(true)
        case 102: try literal("false"); return .bool(false)
        case 110: try literal("null"); return .null
        case 45, 48...57: return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw fail("unexpected end of input") }
        let w = UnsafeBufferPointer(start: word.utf8Start, count: n)
        for k in 0..<n where bytes[i + k] != w[k] { throw fail("invalid literal") }
        i += n
    }

    mutating func parseObject(depth: Int) throws -> JSON {
        i += 1
        var members: [(String, JSON)] = []
        var seen = Set<String>()
        skipWhitespace()
        if i < bytes.count, bytes[i] == 125 { i += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == 34 else { throw fail("expected a member name") }
            let key = try parseString()
            guard seen.insert(key).inserted else { throw fail("duplicate member \"\(key)\"") }
            skipWhitespace()
            guard i < bytes.count, bytes[i] == 58 else { throw fail("expected ':'") }
            i += 1
            skipWhitespace()
            members.append((key, try parseValue(depth: depth + 1)))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == 44 { i += 1; continue }
            if bytes[i] == 125 { i += 1; return .object(members) }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws -> JSON {
        i += 1
        var items: [JSON] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == 93 { i += 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == 44 { i += 1; continue }
            if bytes[i] == 93 { i += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func parseNumber() throws -> JSON {
        let start = i
        if bytes[i] == 45 { i += 1 }
        guard i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 else { throw fail("invalid number") }
        if bytes[i] == 48 { i += 1 } else { while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 } }
        var integral = true
        if i < bytes.count, bytes[i] == 46 {
            integral = false
            i += 1
            guard i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 else { throw fail("invalid number") }
            while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 }
        }
        if i < bytes.count, bytes[i] == 101 || bytes[i] == 69 {
            integral = false
            i += 1
            if i < bytes.count, bytes[i] == 43 || bytes[i] == 45 { i += 1 }
            guard i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 else { throw fail("invalid number") }
            while i < bytes.count, bytes[i] >= 48, bytes[i] <= 57 { i += 1 }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if integral, let v = Int64(text) { return .int(v) }
        return .number(text)
    }

    mutating func hex4() throws -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("bad \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 48...57: d = UInt32(c - 48)
            case 97...102: d = UInt32(c - 87)
            case 65...70: d = UInt32(c - 55)
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    mutating func parseString() throws -> String {
        i += 1
        let start = i
        // Fast path: no escapes, ASCII or valid UTF-8.
        while i < bytes.count {
            let c = bytes[i]
            if c == 34 {
                let slice = bytes[start..<i]
                i += 1
                guard let s = String(validating: slice, as: UTF8.self) else { throw fail("invalid UTF-8") }
                return s
            }
            if c == 92 { break }
            if c < 32 { throw fail("control character in string") }
            i += 1
        }
        var out = Array(bytes[start..<i])
        while i < bytes.count {
            let c = bytes[i]
            if c == 34 {
                i += 1
                guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
                return s
            }
            if c < 32 { throw fail("control character in string") }
            if c != 92 { out.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { break }
            let e = bytes[i]
            i += 1
            switch e {
            case 34: out.append(34)
            case 92: out.append(92)
            case 47: out.append(47)
            case 98: out.append(8)
            case 102: out.append(12)
            case 110: out.append(10)
            case 114: out.append(13)
            case 116: out.append(9)
            case 117:
                var scalar = try hex4()
                if scalar >= 0xD800 && scalar < 0xDC00 {
                    guard i + 1 < bytes.count, bytes[i] == 92, bytes[i + 1] == 117 else { throw fail("lone surrogate") }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw fail("lone surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar < 0xE000 {
                    throw fail("lone surrogate")
                }
                out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar)!)).utf8))
            default: throw fail("bad escape")
            }
        }
        throw fail("unterminated string")
    }
}
