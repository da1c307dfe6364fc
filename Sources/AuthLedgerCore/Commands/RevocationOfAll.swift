/// What a `revokeAll` command says: every device of the user is revoked.
public struct RevocationOfAll: Sendable, Equatable {
    public var user: String
    public var reason: String?

    public init(user: String, reason: String? = nil) {
        self.user = user
        self.reason = reason
    }
}
