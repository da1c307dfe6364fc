/// Why a note, checkpoint, key or policy was refused: a sentence for people (and, for
/// files, the line it is on).
public struct NoteError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong.
    public let message: String
    /// The 1-based line of the file it is on, when it comes from a file.
    public let line: Int?

    /// An error saying `message`, optionally at `line`.
    public init(_ message: String, line: Int? = nil) {
        self.message = message
        self.line = line
    }

    /// `line N: message`, or the message alone.
    public var description: String { line.map { "line \($0): \(message)" } ?? message }
}
