/// `otp.verified`: the right code was given; it creates a grant.
public struct OTPVerified: Equatable, Sendable {
    public var otpId: String
    public var grantId: String
    public var grantExpiresAt: Timestamp

    public init(otpId: String, grantId: String, grantExpiresAt: Timestamp) {
        self.otpId = otpId
        self.grantId = grantId
        self.grantExpiresAt = grantExpiresAt
    }

    init(_ d: EventData) throws(LedgerError) {
        let t = EventType.otpVerified
        try self.init(otpId: d.need(.otpId, t, EventData.string), grantId: d.need(.grantId, t, EventData.string),
                      grantExpiresAt: d.need(.grantExpiresAt, t, EventData.time))
    }

    var data: EventData {
        EventData([(.grantExpiresAt, .time(grantExpiresAt)), (.grantId, .text(grantId)), (.otpId, .text(otpId))])
    }
}
