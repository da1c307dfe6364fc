/// What an `expireChallenge` command says: a challenge's time ran out.
public struct ChallengeExpiry: Sendable, Equatable {
    public var user: String
    public var challengeId: String

    public init(user: String, challengeId: String) {
        self.user = user
        self.challengeId = challengeId
    }
}
