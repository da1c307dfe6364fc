/// What a `deny` command says: device `deviceId` denies a challenge.
public struct Denial: Sendable, Equatable {
    public var user: String
    public var challengeId: String
    public var deviceId: String

    public init(user: String, challengeId: String, deviceId: String) {
        self.user = user
        self.challengeId = challengeId
        self.deviceId = deviceId
    }
}
