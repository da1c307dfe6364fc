/// The `cooling` answer (reference section 3.2): `{"user","active","until","statusCode"}`.
public struct CoolingAnswer: Sendable, Equatable, Encodable {
    public var user: String
    public var cooling: Cooling
    /// Whether the user's personal values were erased.
    public var erased: Bool

    /// The answer for state `s` under `o`.
    public init(_ s: UserState, options o: QueryOptions) {
        user = s.user
        cooling = Cooling(s, asOf: o.asOf)
        erased = s.erased
    }

    public var json: JSON { .object([("user", .string(user))] + cooling.members + Views.erasedMember(erased)) }

    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
