/// What an `expireChallenge` command says: a challenge's time ran out.
public struct ChallengeExpiry: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The challenge's id.
    public var challengeId: String

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, challengeId: String) {
        self.user = user
        self.challengeId = challengeId
    }
}
