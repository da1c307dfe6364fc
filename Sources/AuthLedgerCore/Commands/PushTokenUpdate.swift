/// What an `updatePushToken` command says.
public struct PushTokenUpdate: Sendable, Equatable {
    public var user: String
    public var deviceId: String
    /// The new token; personal data, kept as a commitment in the log.
    public var pushToken: String

    public init(user: String, deviceId: String, pushToken: String) {
        self.user = user
        self.deviceId = deviceId
        self.pushToken = pushToken
    }
}
