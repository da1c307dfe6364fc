/// What a `register` command says about the device it trusts.
public struct Registration: Sendable, Equatable {
    public var user: String
    public var deviceId: String
    /// The device's name (trimmed when recorded; 3–50 characters).
    public var name: String
    /// `mobile`, `desktop`, `tablet`, `browser`, `authenticator` or `other` (the default).
    public var kind: String
    public var platform: String?
    public var appId: String?
    /// The push token of an authenticator; personal data, kept as a commitment in the log.
    public var pushToken: String?
    /// `permanent` (the default) or `temporary`.
    public var binding: String
    /// How trust was established. nil is inferred: `otp` with a grant, `trusted_device` with a
    /// challenge, `email_link` for a device that asked for verification, else `initial`.
    public var via: String?
    /// The grant of a verified one-time code (`via: otp`), used up by this registration.
    public var grantId: String?
    /// The approved challenge (`via: trusted_device`), used up by this registration.
    public var challengeId: String?

    /// A registration; the fields a caller leaves out take their defaults (``Command/Default``).
    public init(user: String, deviceId: String, name: String, kind: String = Command.Default.kind,
                platform: String? = nil, appId: String? = nil, pushToken: String? = nil,
                binding: String = Command.Default.binding, via: String? = nil, grantId: String? = nil,
                challengeId: String? = nil) {
        self.user = user
        self.deviceId = deviceId
        self.name = name
        self.kind = kind
        self.platform = platform
        self.appId = appId
        self.pushToken = pushToken
        self.binding = binding
        self.via = via
        self.grantId = grantId
        self.challengeId = challengeId
    }
}
