/// `challenge.expired`: records that a challenge's time ran out.
public struct ChallengeExpired: Equatable, Sendable {
    /// The challenge whose time ran out.
    public var challengeId: String

    /// A payload with these fields; nothing is checked until it is appended.
    public init(challengeId: String) { self.challengeId = challengeId }

    init(_ d: EventData) throws(LedgerError) { try self.init(challengeId: d.need(.challengeId, .challengeExpired, EventData.string)) }

    var data: EventData { EventData([(.challengeId, .text(challengeId))]) }
}
