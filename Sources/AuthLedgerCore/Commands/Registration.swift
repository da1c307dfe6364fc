/// What a `register` command says about the device it trusts.
public struct Registration: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The device it is about.
    public var deviceId: String
    /// The device's name (trimmed when recorded; 3–50 characters).
    public var name: String
    /// `other` when a caller leaves it out (``Command/Default``).
    public var kind: DeviceKind
    /// The device's platform (`ios`, `android`, …), free text.
    public var platform: String?
    /// The app's id on the device, free text.
    public var appId: String?
    /// The push token of an authenticator; personal data, kept as a commitment in the log.
    public var pushToken: String?
    /// `permanent` when a caller leaves it out (``Command/Default``).
    public var binding: Binding
    /// How trust was established, with its proof. nil is inferred from the user's state:
    /// `email_link` for a device that asked for verification, else `initial`.
    public var via: Via?
    /// The device's public JWK (SPEC 11), when it has a key.
    public var publicKey: StringMap?

    /// A registration; the fields a caller leaves out take their defaults (``Command/Default``).
    public init(user: String, deviceId: String, name: String, kind: DeviceKind = Command.Default.kind,
                platform: String? = nil, appId: String? = nil, pushToken: String? = nil,
                binding: Binding = Command.Default.binding, via: Via? = nil, publicKey: StringMap? = nil) {
        self.user = user
        self.deviceId = deviceId
        self.name = name
        self.kind = kind
        self.platform = platform
        self.appId = appId
        self.pushToken = pushToken
        self.binding = binding
        self.via = via
        self.publicKey = publicKey
    }
}
