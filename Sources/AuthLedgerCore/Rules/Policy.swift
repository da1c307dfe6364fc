/// The policy in force (SPEC 1.3 `policy.set`), with its defaults.
public struct Policy: Equatable, Sendable {
    /// Length of the cooling window a sensitive change opens (SPEC 2.5), in seconds; default 300.
    public var coolingSeconds: Int64 = 300
    /// How long a challenge issued by a command stays pending, in seconds; default 60.
    public var challengeTtlSeconds: Int64 = 60
    /// How long an OTP issued by a command can be verified, in seconds; default 300.
    public var otpTtlSeconds: Int64 = 300
    /// How many wrong codes lock an OTP issued by a command; default 5.
    public var otpMaxAttempts: Int64 = 5
    /// How many OTPs a user may be issued in any hour (`otp_rate_limited`); default 5.
    public var otpPerHour: Int64 = 5
    /// How long a grant, or an approved login challenge, can be used to register a device, in seconds; default 600.
    public var grantTtlSeconds: Int64 = 600
    /// The most active devices a user may have (`device_limit_reached`); default 20.
    public var maxDevices: Int64 = 20
    /// Whether a device is forbidden to revoke itself (`current_device_protected`); default true.
    public var protectCurrentDevice: Bool = true
    /// Whether a device with a key must sign its approvals and denials (`signature_required`); default false.
    public var requireSignedApprovals: Bool = false
    /// How long a verification link issued by a command can be redeemed, in seconds; default 600.
    public var verificationLinkTtlSeconds: Int64 = 600

    /// The default policy, in force before any `policy.set`.
    public init() {}

    /// Applies a `policy.set` patch: the settings it has override the ones in force.
    public mutating func apply(_ patch: PolicySet) {
        coolingSeconds = patch.coolingSeconds ?? coolingSeconds
        challengeTtlSeconds = patch.challengeTtlSeconds ?? challengeTtlSeconds
        otpTtlSeconds = patch.otpTtlSeconds ?? otpTtlSeconds
        otpMaxAttempts = patch.otpMaxAttempts ?? otpMaxAttempts
        otpPerHour = patch.otpPerHour ?? otpPerHour
        grantTtlSeconds = patch.grantTtlSeconds ?? grantTtlSeconds
        maxDevices = patch.maxDevices ?? maxDevices
        protectCurrentDevice = patch.protectCurrentDevice ?? protectCurrentDevice
        requireSignedApprovals = patch.requireSignedApprovals ?? requireSignedApprovals
        verificationLinkTtlSeconds = patch.verificationLinkTtlSeconds ?? verificationLinkTtlSeconds
    }

    /// Every setting as a JSON object, in the order of `policy.set`'s table.
    public var json: JSON {
        .object([("coolingSeconds", .int(coolingSeconds)), ("challengeTtlSeconds", .int(challengeTtlSeconds)),
                 ("otpTtlSeconds", .int(otpTtlSeconds)), ("otpMaxAttempts", .int(otpMaxAttempts)),
                 ("otpPerHour", .int(otpPerHour)), ("grantTtlSeconds", .int(grantTtlSeconds)),
                 ("maxDevices", .int(maxDevices)), ("protectCurrentDevice", .bool(protectCurrentDevice)),
                 ("requireSignedApprovals", .bool(requireSignedApprovals)),
                 ("verificationLinkTtlSeconds", .int(verificationLinkTtlSeconds))])
    }
}
