/// What an `access` command says: an active device was used.
public struct Access: Sendable, Equatable {
    public var user: String
    public var deviceId: String

    public init(user: String, deviceId: String) {
        self.user = user
        self.deviceId = deviceId
    }
}
