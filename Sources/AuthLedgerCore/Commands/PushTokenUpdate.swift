/// What an `updatePushToken` command says.
public struct PushTokenUpdate: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The device it is about.
    public var deviceId: String
    /// The new token; personal data, kept as a commitment in the log.
    public var pushToken: String

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, deviceId: String, pushToken: String) {
        self.user = user
        self.deviceId = deviceId
        self.pushToken = pushToken
    }
}
