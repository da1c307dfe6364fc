import AuthLedgerCore
import Foundation

/// The body of a C2SP `tlog-witness` `add-checkpoint` request: `old <N>\n`, up to 63
/// base64 consistency-proof hashes one per line, a blank line, then the signed checkpoint.
public struct AddCheckpointRequest: Sendable {
    /// The most proof lines a request may carry.
    public static let maxProofLines = 63

    /// The size the client believes the witness holds.
    public let oldSize: UInt64
    /// The consistency proof from `oldSize` to the checkpoint's size.
    public let proof: [Hash32]
    /// The signed checkpoint note.
    public let note: SignedNote
    /// Its body.
    public let checkpoint: Checkpoint

    /// Parses `body`. Throws ``NoteError`` saying what is malformed.
    public init(parsing body: [UInt8]) throws {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        // The header: the old size line, the proof lines, the blank line.
        while true {
            guard let end = body[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                throw NoteError("the request ends before the blank line that precedes the checkpoint")
            }
            let line = body[start..<end]
            start = end + 1
            if line.isEmpty { break }
            lines.append(line)
            guard lines.count <= 1 + AddCheckpointRequest.maxProofLines else {
                throw NoteError("more than \(AddCheckpointRequest.maxProofLines) consistency proof lines")
            }
        }
        guard let first = lines.first, first.starts(with: Array("old ".utf8)) else {
            throw NoteError("the first line is 'old <size>'")
        }
        let digits = first.dropFirst(4)
        guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ (48...57).contains($0) }),
              digits.count == 1 || digits.first != UInt8(ascii: "0"),
              let n = UInt64(String(decoding: digits, as: UTF8.self)) else {
            throw NoteError("the old size is not a decimal number without leading zeros")
        }
        oldSize = n
        proof = try lines.dropFirst().map { line in
            guard line.count == 44, let h = Data(base64Encoded: Data(line)), h.count == 32 else {
                throw NoteError("a consistency proof line is not base64 of a 32-byte hash")
            }
            return Hash32(bytes: Array(h))
        }
        note = try SignedNote(parsing: Array(body[start...]))
        checkpoint = try Checkpoint(text: note.text)
    }
}
