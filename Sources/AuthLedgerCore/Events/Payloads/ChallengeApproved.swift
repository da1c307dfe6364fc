/// `challenge.approved`.
public struct ChallengeApproved: Equatable, Sendable {
    /// The challenge's id.
    public var challengeId: String
    /// The device that approved it.
    public var approverDeviceId: String
    /// The user passed a biometric or PIN check on the approver, when it says.
    public var userVerified: Bool?
    /// The approver's compact JWS over the answer (``ApprovalStatement``), when signed.
    public var signature: String?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(challengeId: String, approverDeviceId: String, userVerified: Bool? = nil, signature: String? = nil) {
        self.challengeId = challengeId
        self.approverDeviceId = approverDeviceId
        self.userVerified = userVerified
        self.signature = signature
    }

    init(_ d: EventData) throws(LedgerError) {
        let t = EventType.challengeApproved
        try self.init(challengeId: d.need(.challengeId, t, EventData.string),
                      approverDeviceId: d.need(.approverDeviceId, t, EventData.string), userVerified: d.bool(.userVerified),
                      signature: d.string(.signature))
    }

    var data: EventData {
        EventData([(.approverDeviceId, .text(approverDeviceId)), (.challengeId, .text(challengeId)),
                   (.signature, .text(signature)), (.userVerified, userVerified.map { .bool($0) })])
    }
}
