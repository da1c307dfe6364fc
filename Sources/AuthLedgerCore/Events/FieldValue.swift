/// The value of one `data` field, typed by its field's `kind`.
public enum FieldValue: Equatable, Sendable {
    /// A string (free text or an id).
    case string(String)
    /// A time (`expiresAt`, `grantExpiresAt`).
    case time(Timestamp)
    /// An integer (the policy settings, `maxAttempts`).
    case int(Int64)
    /// A boolean (`protectCurrentDevice`, `userVerified`).
    case bool(Bool)
    /// An object of strings (`context`).
    case map(StringMap)

    /// The value as it is recorded: a time as its normalised RFC 3339 text, a map as an object.
    public var json: JSON {
        switch self {
        case let .string(s): .string(s)
        case let .time(t): .string(t.formatted)
        case let .int(i): .int(i)
        case let .bool(b): .bool(b)
        case let .map(m): m.json
        }
    }
}
