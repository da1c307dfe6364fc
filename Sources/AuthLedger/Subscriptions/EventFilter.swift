import AuthLedgerCore
/// Which events a subscriber wants: one user's stream, some event types, or both.
public struct EventFilter: Sendable, Equatable {
    /// Only this user's events (nil: every stream, `policy.set` included).
    public var user: String?
    /// Only these types (nil: every type).
    public var types: Set<EventType>?

    /// A filter on `user` and `types` (nil: no condition on it).
    public init(user: String? = nil, types: Set<EventType>? = nil) {
        self.user = user
        self.types = types
    }

    /// Every event.
    public static let all = EventFilter()

    /// Whether `e` passes both conditions.
    public func matches(_ e: RecordedEvent) -> Bool {
        if let user, e.event.user != user { return false }
        if let types, !types.contains(e.event.type) { return false }
        return true
    }

    /// Parses a comma-separated list of type names (`device.registered,device.revoked`).
    /// Empty text means no restriction.
    public static func parseTypes(_ text: String) throws(LedgerError) -> Set<EventType>? {
        let names = text.split(separator: ",").map { String($0.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }.filter { !$0.isEmpty }
        guard !names.isEmpty else { return nil }
        var out = Set<EventType>()
        for name in names {
            guard let t = EventType(name: name) else {
                throw LedgerError.invalid("unknown event type \"\(EventDecoder.clip(name))\"", field: "types")
            }
            out.insert(t)
        }
        return out
    }

    /// `{"user": …, "types": […]}`, members present only when set; types in tag order.
    public var json: JSON {
        var m: [(String, JSON)] = []
        if let user { m.append(("user", .string(user))) }
        if let types { m.append(("types", .array(types.sorted { $0.rawValue < $1.rawValue }.map { .string($0.name) }))) }
        return .object(m)
    }
}
