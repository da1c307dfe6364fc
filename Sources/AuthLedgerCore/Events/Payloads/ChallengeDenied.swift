/// `challenge.denied`.
public struct ChallengeDenied: Equatable, Sendable {
    public var challengeId: String
    public var approverDeviceId: String

    public init(challengeId: String, approverDeviceId: String) {
        self.challengeId = challengeId
        self.approverDeviceId = approverDeviceId
    }

    init(_ d: EventData) throws(LedgerError) {
        let t = EventType.challengeDenied
        try self.init(challengeId: d.need(.challengeId, t, EventData.string),
                      approverDeviceId: d.need(.approverDeviceId, t, EventData.string))
    }

    var data: EventData { EventData([(.approverDeviceId, .text(approverDeviceId)), (.challengeId, .text(challengeId))]) }
}
