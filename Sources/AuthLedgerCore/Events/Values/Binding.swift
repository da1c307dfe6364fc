/// How long a registration is meant to last (SPEC 1.3 `binding`).
public enum Binding: String, CaseIterable, Sendable, Codable {
    /// Meant to stay trusted, or for a while (a shared or borrowed device).
    case permanent, temporary

    /// The binding named `text`, or `invalid_event` naming `path`.
    public init(parsing text: String, path: String) throws(LedgerError) {
        guard let b = Binding(rawValue: text) else { throw .invalid("\"\(path)\" must be permanent or temporary", field: path) }
        self = b
    }
}
