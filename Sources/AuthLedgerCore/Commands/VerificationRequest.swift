/// What a `requestVerification` command says: an unrecognised device signed in.
public struct VerificationRequest: Sendable, Equatable {
    public var user: String
    public var deviceId: String
    /// The name it gives (trimmed when recorded), if any.
    public var name: String?
    public var kind: DeviceKind?
    public var platform: String?

    public init(user: String, deviceId: String, name: String? = nil, kind: DeviceKind? = nil, platform: String? = nil) {
        self.user = user
        self.deviceId = deviceId
        self.name = name
        self.kind = kind
        self.platform = platform
    }
}
