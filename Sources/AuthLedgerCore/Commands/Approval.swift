/// What an `approve` command says: device `deviceId` approves a challenge.
public struct Approval: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The challenge's id.
    public var challengeId: String
    /// The device it is about.
    public var deviceId: String
    /// The device's compact JWS over its answer (``ApprovalStatement``), when it signs.
    public var signature: String?
    /// The user passed a biometric or PIN check on the approving device, when it says.
    public var userVerified: Bool?

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, challengeId: String, deviceId: String, userVerified: Bool? = nil, signature: String? = nil) {
        self.user = user
        self.challengeId = challengeId
        self.deviceId = deviceId
        self.signature = signature
        self.userVerified = userVerified
    }
}
