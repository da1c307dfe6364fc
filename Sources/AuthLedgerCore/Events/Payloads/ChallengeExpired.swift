/// `challenge.expired`: records that a challenge's time ran out.
public struct ChallengeExpired: Equatable, Sendable {
    public var challengeId: String

    public init(challengeId: String) { self.challengeId = challengeId }

    init(_ d: EventData) throws(LedgerError) { try self.init(challengeId: d.need(.challengeId, .challengeExpired, EventData.string)) }

    var data: EventData { EventData([(.challengeId, .text(challengeId))]) }
}
