import Foundation

/// A C2SP `signed-note`: a text ending in a newline, a blank line, and one or more
/// signature lines `— <key name> <base64(key id ‖ signature)>`. The text is separated
/// from the signatures by the last blank line. Parsing checks the shape only;
/// ``verified(by:)`` and ``cosignatures(by:)`` check signatures of known keys and ignore
/// the others, as the format asks.
public struct SignedNote: Sendable, Equatable {
    /// One signature line.
    public struct Signature: Sendable, Equatable {
        /// The key name on the line.
        public let name: String
        /// The first four bytes of the signature blob, big-endian.
        public let keyID: UInt32
        /// The bytes after the key id (64 for Ed25519, 8 + 64 for `cosignature/v1`).
        public let bytes: [UInt8]
        /// The whole line, newline included.
        public let line: String
    }

    /// The most bytes a note may have here (a checkpoint with a few dozen signatures fits easily).
    public static let maxBytes = 64 * 1024
    /// The most signature lines a note may have (the format asks verifiers to accept at least 16).
    public static let maxSignatures = 100

    /// The note text, final newline included.
    public let text: String
    /// The signature lines, in order.
    public let signatures: [Signature]

    /// Parses `note`. Throws ``NoteError`` for a note that is not UTF-8, has a control
    /// character other than newline, has no blank line before its signatures, or a
    /// signature line of another shape.
    public init(parsing note: [UInt8]) throws {
        guard note.count <= SignedNote.maxBytes else { throw NoteError("the note is over \(SignedNote.maxBytes) bytes") }
        guard !note.contains(where: { $0 < 0x20 && $0 != UInt8(ascii: "\n") || $0 == 0x7F }) else {
            throw NoteError("the note has a control character")
        }
        guard String(validating: note, as: UTF8.self) != nil else { throw NoteError("the note is not UTF-8") }
        guard note.last == UInt8(ascii: "\n") else { throw NoteError("the note does not end with a newline") }
        // The last "\n\n": the text ends at its first newline, the signatures start after its second.
        var split: Int?
        var k = note.count - 2
        while k >= 0 {
            if note[k] == UInt8(ascii: "\n") && note[k + 1] == UInt8(ascii: "\n") { split = k; break }
            k -= 1
        }
        guard let split, split > 0 else { throw NoteError("the note has no blank line before its signatures") }
        text = String(decoding: note[...split], as: UTF8.self)
        let lines = note[(split + 2)...].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast()
        guard !lines.isEmpty else { throw NoteError("the note has no signature") }
        guard lines.count <= SignedNote.maxSignatures else { throw NoteError("the note has over \(SignedNote.maxSignatures) signatures") }
        signatures = try lines.map { try SignedNote.signature(String(decoding: $0, as: UTF8.self)) }
    }

    /// Parses one signature line (without its newline). Throws ``NoteError`` for another shape.
    public static func signature(_ line: String) throws -> Signature {
        let prefix = "\u{2014} "
        guard line.hasPrefix(prefix) else { throw NoteError("a signature line starts with an em dash and a space") }
        let fields = line.dropFirst(prefix.count).split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 2, NoteVerifierKey.isKeyName(String(fields[0])) else {
            throw NoteError("a signature line is '— <key name> <base64 signature>'")
        }
        guard let blob = Data(base64Encoded: String(fields[1])), blob.count >= 5 else {
            throw NoteError("a signature is base64 of a key id and the signature bytes")
        }
        let bytes = Array(blob)
        let id = bytes.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Signature(name: String(fields[0]), keyID: id, bytes: Array(bytes[4...]), line: line + "\n")
    }

    /// For a `0x01` (Ed25519) key: true when the note has a signature line of `key` (name
    /// and id) and every such line verifies; false when one fails; nil when there is none.
    public func verified(by key: NoteVerifierKey) -> Bool? {
        let mine = signatures.filter { $0.name == key.name && $0.keyID == key.keyID }
        guard key.type == NoteVerifierKey.ed25519, !mine.isEmpty else { return nil }
        let message = Array(text.utf8)
        return mine.allSatisfy { $0.bytes.count == 64 && key.isValidSignature($0.bytes, for: message) }
    }

    /// For a `0x04` witness key: the timestamps of its `cosignature/v1` lines that verify
    /// (empty when it has none or none verifies).
    public func cosignatures(by key: NoteVerifierKey) -> [UInt64] {
        signatures.compactMap { Cosigner.verify($0, text: text, key: key) }
    }
}
