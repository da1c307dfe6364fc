/// `challenge.denied`.
public struct ChallengeDenied: Equatable, Sendable {
    /// The challenge's id.
    public var challengeId: String
    /// The device that denied it.
    public var approverDeviceId: String
    /// The denier's compact JWS over the answer (``ApprovalStatement``), when signed.
    public var signature: String?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(challengeId: String, approverDeviceId: String, signature: String? = nil) {
        self.challengeId = challengeId
        self.approverDeviceId = approverDeviceId
        self.signature = signature
    }

    init(_ d: EventData) throws(LedgerError) {
        let t = EventType.challengeDenied
        try self.init(challengeId: d.need(.challengeId, t, EventData.string),
                      approverDeviceId: d.need(.approverDeviceId, t, EventData.string), signature: d.string(.signature))
    }

    var data: EventData {
        EventData([(.approverDeviceId, .text(approverDeviceId)), (.challengeId, .text(challengeId)), (.signature, .text(signature))])
    }
}
