/// The `cooling` answer (reference section 3.2): `{"user","active","until","statusCode"}`.
public struct CoolingAnswer: Sendable, Equatable, Encodable {
    /// The user the window is about.
    public var user: String
    /// The cooling window at `asOf`.
    public var cooling: Cooling
    /// Whether the user's personal values were erased.
    public var erased: Bool

    /// The answer for state `s` under `o`.
    public init(_ s: UserState, options o: QueryOptions) {
        user = s.user
        cooling = Cooling(s, asOf: o.asOf)
        erased = s.erased
    }

    /// The answer as the API writes it: its JSON document, member for member.
    public var json: JSON { .object([("user", .string(user))] + cooling.members + Views.erasedMember(erased)) }

    /// Encodes the answer as its JSON document (``json``).
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
