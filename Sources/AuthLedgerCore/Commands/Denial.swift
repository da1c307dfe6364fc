/// What a `deny` command says: device `deviceId` denies a challenge.
public struct Denial: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The challenge's id.
    public var challengeId: String
    /// The device it is about.
    public var deviceId: String
    /// The device's compact JWS over its answer (``ApprovalStatement``), when it signs.
    public var signature: String?

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, challengeId: String, deviceId: String, signature: String? = nil) {
        self.user = user
        self.challengeId = challengeId
        self.deviceId = deviceId
        self.signature = signature
    }
}
