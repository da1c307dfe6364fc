/// What a `revoke` command says: one device to revoke.
public struct Revocation: Sendable, Equatable {
    public var user: String
    public var deviceId: String
    public var reason: String?

    public init(user: String, deviceId: String, reason: String? = nil) {
        self.user = user
        self.deviceId = deviceId
        self.reason = reason
    }
}
