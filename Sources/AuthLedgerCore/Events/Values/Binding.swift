/// How long a registration is meant to last (SPEC 1.3 `binding`).
public enum Binding: String, NamedValue, Sendable, Codable {
    /// Meant to stay trusted, or for a while (a shared or borrowed device).
    case permanent, temporary

    /// The refusal's wording: "permanent or temporary".
    public static var expected: String { "permanent or temporary" }
}
