/// What a `revoke` command says: one device to revoke.
public struct Revocation: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The device it is about.
    public var deviceId: String
    /// Why, in the caller's words (free text), if given.
    public var reason: String?

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, deviceId: String, reason: String? = nil) {
        self.user = user
        self.deviceId = deviceId
        self.reason = reason
    }
}
