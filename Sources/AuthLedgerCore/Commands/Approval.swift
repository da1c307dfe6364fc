/// What an `approve` command says: device `deviceId` approves a challenge.
public struct Approval: Sendable, Equatable {
    public var user: String
    public var challengeId: String
    public var deviceId: String
    /// The user passed a biometric or PIN check on the approving device, when it says.
    public var userVerified: Bool?

    public init(user: String, challengeId: String, deviceId: String, userVerified: Bool? = nil) {
        self.user = user
        self.challengeId = challengeId
        self.deviceId = deviceId
        self.userVerified = userVerified
    }
}
