/// The `devices` answer (reference section 3.1): a user's devices and cooling window at a
/// position and time.
public struct DeviceList: Sendable, Equatable, Encodable {
    /// The user whose devices these are.
    public var user: String
    /// The log position the answer reflects.
    public var position: UInt64
    /// The time the answer was evaluated at.
    public var asOf: Timestamp
    /// Ordered by registration time (request time while never registered), then id;
    /// revoked ones only when asked for.
    public var devices: [Device]
    /// The cooling window at `asOf`.
    public var cooling: Cooling
    /// Whether the user's personal values were erased.
    public var erased: Bool

    /// The answer for state `s` at `position` under `o`.
    public init(_ s: UserState, position: UInt64, options o: QueryOptions) {
        user = s.user
        self.position = position
        asOf = o.asOf
        devices = Views.listedDevices(s, includeRevoked: o.includeRevoked).map { Device($0, current: o.current) }
        cooling = Cooling(s, asOf: o.asOf)
        erased = s.erased
    }

    /// The answer as the API writes it: its JSON document, member for member.
    public var json: JSON {
        .object([
            ("user", .string(user)), ("position", .int(Int64(position))), ("asOf", .string(asOf.formatted)),
            ("devices", .array(devices.map(\.json))), ("cooling", cooling.json),
        ] + Views.erasedMember(erased))
    }

    /// Encodes the answer as its JSON document (``json``).
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
