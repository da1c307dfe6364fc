/// `challenge.denied`.
public struct ChallengeDenied: Equatable, Sendable {
    /// The challenge's id.
    public var challengeId: String
    /// The device that denied it.
    public var approverDeviceId: String

    /// A payload with these fields; nothing is checked until it is appended.
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
