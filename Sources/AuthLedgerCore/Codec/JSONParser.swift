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
