/// What a `revokeAll` command says: every device of the user is revoked.
public struct RevocationOfAll: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// Why, in the caller's words (free text), if given.
    public var reason: String?

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, reason: String? = nil) {
        self.user = user
        self.reason = reason
    }
}
