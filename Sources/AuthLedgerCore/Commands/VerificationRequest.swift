/// What a `requestVerification` command says: an unrecognised device signed in.
public struct VerificationRequest: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The device it is about.
    public var deviceId: String
    /// The name it gives (trimmed when recorded), if any.
    public var name: String?
    /// What kind of device it says it is, if it says.
    public var kind: DeviceKind?
    /// The device's platform (`ios`, `android`, `linux`, …), free text.
    public var platform: String?

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, deviceId: String, name: String? = nil, kind: DeviceKind? = nil, platform: String? = nil) {
        self.user = user
        self.deviceId = deviceId
        self.name = name
        self.kind = kind
        self.platform = platform
    }
}
