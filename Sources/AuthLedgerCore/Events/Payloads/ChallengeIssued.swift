/// `challenge.issued`: a device asks the user's trusted devices to approve an action.
public struct ChallengeIssued: Equatable, Sendable {
    /// The challenge's id.
    public var challengeId: String
    /// A lower-case word: `login`, `transaction`, `update_profile`, ….
    public var action: String
    /// The device that asked for the approval.
    public var requestingDeviceId: String
    /// From this time on it is expired.
    public var expiresAt: Timestamp
    /// What the approver is shown; erased values are absent from it.
    public var context: StringMap?
    /// 16 random bytes, base64url, that a signed answer must carry (SPEC 11); nil when recorded without.
    public var nonce: String?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(challengeId: String, action: String, requestingDeviceId: String, expiresAt: Timestamp, context: StringMap? = nil,
                nonce: String? = nil) {
        self.challengeId = challengeId
        self.action = action
        self.requestingDeviceId = requestingDeviceId
        self.expiresAt = expiresAt
        self.context = context
        self.nonce = nonce
    }

    init(_ d: EventData) throws(LedgerError) {
        let t = EventType.challengeIssued
        try self.init(challengeId: d.need(.challengeId, t, EventData.string), action: d.need(.action, t, EventData.string),
                      requestingDeviceId: d.need(.requestingDeviceId, t, EventData.string),
                      expiresAt: d.need(.expiresAt, t, EventData.time), context: d.map(.context),
                      nonce: d.string(.nonce))
    }

    var data: EventData {
        EventData([(.action, .text(action)), (.challengeId, .text(challengeId)), (.context, context.map { .map($0) }),
                   (.expiresAt, .time(expiresAt)), (.nonce, .text(nonce)), (.requestingDeviceId, .text(requestingDeviceId))])
    }
}
