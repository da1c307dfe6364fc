/// A value written as one of a fixed set of names (`kind`, `binding`, `channel`): parsed
/// from text in one place, for events and commands alike.
public protocol NamedValue: RawRepresentable<String>, CaseIterable {
    /// What the refusal of another name says is expected; by default "one of" the names, sorted.
    static var expected: String { get }
}

extension NamedValue {
    /// "one of" the names, sorted.
    public static var expected: String { "one of " + allCases.map(\.rawValue).sorted().joined(separator: ", ") }

    /// The value named `text`, or `invalid_event` naming `path`.
    public init(parsing text: String, path: String) throws(LedgerError) {
        guard let v = Self(rawValue: text) else { throw .invalid("\"\(path)\" must be \(Self.expected)", field: path) }
        self = v
    }
}
