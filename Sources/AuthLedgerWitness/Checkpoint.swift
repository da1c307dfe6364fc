import AuthLedgerCore
import Foundation

/// The body of a C2SP `tlog-checkpoint`: the origin, the tree size in decimal, the
/// base64 root hash, each on its own line, and any extension lines after them.
public struct Checkpoint: Sendable, Equatable {
    /// The log's origin (first line), also the log key's name.
    public let origin: String
    /// The number of leaves.
    public let size: UInt64
    /// The RFC 6962 root hash of the tree of `size` leaves.
    public let root: Hash32
    /// The non-empty lines after the root, if any (kept, never interpreted).
    public let extensions: [String]

    /// Parses a note text (final newline included). Throws ``NoteError`` for any other shape.
    public init(text: String) throws {
        guard text.hasSuffix("\n") else { throw NoteError("a checkpoint ends with a newline") }
        let lines = text.dropLast().split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 3 else { throw NoteError("a checkpoint has an origin, a size and a root hash line") }
        guard !lines[0].isEmpty else { throw NoteError("the checkpoint's origin is empty") }
        let sizeText = lines[1]
        guard !sizeText.isEmpty, sizeText.count <= 20, sizeText.utf8.allSatisfy({ (48...57).contains($0) }),
              sizeText == "0" || sizeText.first != "0", let size = UInt64(sizeText), size <= UInt64(Int64.max) else {
            throw NoteError("the checkpoint's size is not a decimal number without leading zeros")
        }
        guard let root = Data(base64Encoded: String(lines[2])), root.count == 32 else {
            throw NoteError("the checkpoint's root hash is not base64 of 32 bytes")
        }
        guard lines.dropFirst(3).allSatisfy({ !$0.isEmpty }) else { throw NoteError("a checkpoint extension line is empty") }
        origin = String(lines[0])
        self.size = size
        self.root = Hash32(bytes: Array(root))
        extensions = lines.dropFirst(3).map(String.init)
    }
}
