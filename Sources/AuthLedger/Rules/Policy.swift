/// The policy in force (SPEC 1.3 `policy.set`), with its defaults.
public struct Policy: Equatable, Sendable {
    public var coolingSeconds: Int64 = 300
    public var challengeTtlSeconds: Int64 = 60
    public var otpTtlSeconds: Int64 = 300
    public var otpMaxAttempts: Int64 = 5
    public var otpPerHour: Int64 = 5
    public var grantTtlSeconds: Int64 = 600
    public var maxDevices: Int64 = 20
    public var protectCurrentDevice: Bool = true

    public init() {}

    /// Applies a `policy.set` patch: later values override earlier ones.
    public mutating func apply(_ data: EventData) {
        for (field, value) in data.entries {
            switch (field, value) {
            case let (.coolingSeconds, .int(v)): coolingSeconds = v
            case let (.challengeTtlSeconds, .int(v)): challengeTtlSeconds = v
            case let (.otpTtlSeconds, .int(v)): otpTtlSeconds = v
            case let (.otpMaxAttempts, .int(v)): otpMaxAttempts = v
            case let (.otpPerHour, .int(v)): otpPerHour = v
            case let (.grantTtlSeconds, .int(v)): grantTtlSeconds = v
            case let (.maxDevices, .int(v)): maxDevices = v
            case let (.protectCurrentDevice, .bool(v)): protectCurrentDevice = v
            default: break
            }
        }
    }

    public var json: JSON {
        .object([("coolingSeconds", .int(coolingSeconds)), ("challengeTtlSeconds", .int(challengeTtlSeconds)),
                 ("otpTtlSeconds", .int(otpTtlSeconds)), ("otpMaxAttempts", .int(otpMaxAttempts)),
                 ("otpPerHour", .int(otpPerHour)), ("grantTtlSeconds", .int(grantTtlSeconds)),
                 ("maxDevices", .int(maxDevices)), ("protectCurrentDevice", .bool(protectCurrentDevice))])
    }
}

/// The `$system` stream's state: the policy and the stream's own position and clock.
public struct SystemState: Equatable, Sendable {
    public var policy = Policy()
    public var version: UInt64 = 0
    public var lastAt: Timestamp?

    public init() {}

    /// Validates and applies a `policy.set` (the only event of this stream).
    public mutating func evolve(_ event: Event) throws(LedgerError) {
        guard event.type == .policySet else { throw .invalid("only policy.set belongs to $system") }
        if let lastAt, event.at < lastAt {
            throw LedgerError(.timeRegression, "at \(event.at) is before the stream's last event at \(lastAt)", field: "at")
        }
        policy.apply(event.data)
        version += 1
        lastAt = event.at
    }
}
