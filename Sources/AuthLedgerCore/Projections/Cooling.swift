/// Whether a user's cooling window is open (reference section 3.2).
public struct Cooling: Sendable, Equatable, Encodable {
    /// Whether a cooling window is open at `asOf`.
    public var active: Bool
    /// When the open window ends; nil when none is open.
    public var until: Timestamp?
    /// 146 while a window is open, 100 otherwise.
    public var statusCode: Int { active ? 146 : 100 }

    /// The cooling window of `s` at `asOf`.
    public init(_ s: UserState, asOf: Timestamp) {
        active = s.isCooling(at: asOf)
        until = active ? s.coolingUntil : nil
    }

    /// `active`, `until`, `statusCode`: the members both answers that show cooling share.
    public var members: [(String, JSON)] {
        [("active", .bool(active)), ("until", .optional(until?.formatted)), ("statusCode", .int(Int64(statusCode)))]
    }

    /// The window as the API writes it (`active`, and `until` while one is open).
    public var json: JSON { .object(members) }

    /// Encodes the answer as its JSON document (``json``).
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
