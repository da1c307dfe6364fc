/// `policy.set`: the settings it changes; the others keep their values (SPEC 1.3).
public struct PolicySet: Equatable, Sendable {
    /// The new `coolingSeconds`; nil leaves it as it is.
    public var coolingSeconds: Int64?
    /// The new `challengeTtlSeconds`; nil leaves it as it is.
    public var challengeTtlSeconds: Int64?
    /// The new `otpTtlSeconds`; nil leaves it as it is.
    public var otpTtlSeconds: Int64?
    /// The new `otpMaxAttempts`; nil leaves it as it is.
    public var otpMaxAttempts: Int64?
    /// The new `otpPerHour`; nil leaves it as it is.
    public var otpPerHour: Int64?
    /// The new `grantTtlSeconds`; nil leaves it as it is.
    public var grantTtlSeconds: Int64?
    /// The new `maxDevices`; nil leaves it as it is.
    public var maxDevices: Int64?
    /// The new `protectCurrentDevice`; nil leaves it as it is.
    public var protectCurrentDevice: Bool?
    /// The new `requireSignedApprovals`; nil leaves it as it is.
    public var requireSignedApprovals: Bool?
    /// The new `verificationLinkTtlSeconds`; nil leaves it as it is.
    public var verificationLinkTtlSeconds: Int64?

    /// A patch with these settings (at least one is needed to append it).
    public init(coolingSeconds: Int64? = nil, challengeTtlSeconds: Int64? = nil, otpTtlSeconds: Int64? = nil,
                otpMaxAttempts: Int64? = nil, otpPerHour: Int64? = nil, grantTtlSeconds: Int64? = nil,
                maxDevices: Int64? = nil, protectCurrentDevice: Bool? = nil, requireSignedApprovals: Bool? = nil,
                verificationLinkTtlSeconds: Int64? = nil) {
        self.coolingSeconds = coolingSeconds
        self.challengeTtlSeconds = challengeTtlSeconds
        self.otpTtlSeconds = otpTtlSeconds
        self.otpMaxAttempts = otpMaxAttempts
        self.otpPerHour = otpPerHour
        self.grantTtlSeconds = grantTtlSeconds
        self.maxDevices = maxDevices
        self.protectCurrentDevice = protectCurrentDevice
        self.requireSignedApprovals = requireSignedApprovals
        self.verificationLinkTtlSeconds = verificationLinkTtlSeconds
    }

    /// The settings of `data`.
    public init(_ data: EventData) {
        self.init(coolingSeconds: data.int(.coolingSeconds), challengeTtlSeconds: data.int(.challengeTtlSeconds),
                  otpTtlSeconds: data.int(.otpTtlSeconds), otpMaxAttempts: data.int(.otpMaxAttempts),
                  otpPerHour: data.int(.otpPerHour), grantTtlSeconds: data.int(.grantTtlSeconds),
                  maxDevices: data.int(.maxDevices), protectCurrentDevice: data.bool(.protectCurrentDevice),
                  requireSignedApprovals: data.bool(.requireSignedApprovals),
                  verificationLinkTtlSeconds: data.int(.verificationLinkTtlSeconds))
    }

    /// Whether it changes nothing (refused: `policy.set` needs a setting).
    public var isEmpty: Bool { data.entries.isEmpty }

    /// The recorded `data`.
    public var data: EventData {
        EventData([(.challengeTtlSeconds, int(challengeTtlSeconds)), (.coolingSeconds, int(coolingSeconds)),
                   (.grantTtlSeconds, int(grantTtlSeconds)), (.maxDevices, int(maxDevices)),
                   (.otpMaxAttempts, int(otpMaxAttempts)), (.otpPerHour, int(otpPerHour)),
                   (.otpTtlSeconds, int(otpTtlSeconds)), (.protectCurrentDevice, protectCurrentDevice.map { .bool($0) }),
                   (.requireSignedApprovals, requireSignedApprovals.map { .bool($0) }),
                   (.verificationLinkTtlSeconds, int(verificationLinkTtlSeconds))])
    }

    private func int(_ v: Int64?) -> FieldValue? { v.map { .int($0) } }
}
