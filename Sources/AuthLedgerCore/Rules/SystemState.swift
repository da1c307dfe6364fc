/// The `$system` stream's state: the policy and the stream's own position and clock.
public struct SystemState: Equatable, Sendable {
    /// The policy in force after the stream's events.
    public var policy = Policy()
    /// How many `policy.set` events were folded in.
    public var version: UInt64 = 0
    /// The `at` of the latest `policy.set`; a later one may not be earlier (`time_regression`).
    public var lastAt: Timestamp?

    /// The state before any `policy.set`: the default policy.
    public init() {}

    /// Validates and applies a `policy.set` (the only event of this stream).
    public mutating func evolve(_ event: Event) throws(LedgerError) {
        guard event.type == .policySet else { throw .invalid("only policy.set belongs to $system") }
        if let lastAt, event.at < lastAt {
            throw LedgerError(.timeRegression, "at \(event.at) is before the stream's last event at \(lastAt)", field: "at")
        }
        policy.apply(PolicySet(event.data))
        version += 1
        lastAt = event.at
    }
}
