/// What an `access` command says: an active device was used.
public struct Access: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The device it is about.
    public var deviceId: String

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, deviceId: String) {
        self.user = user
        self.deviceId = deviceId
    }
}
