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
