/// `otp.verified`: the right code was given; it creates a grant.
public struct OTPVerified: Equatable, Sendable {
    /// The one-time code that was verified.
    public var otpId: String
    /// The grant it created: what a `via: otp` registration names, once.
    public var grantId: String
    /// Until when the grant may be used.
    public var grantExpiresAt: Timestamp

    /// A payload with these fields; nothing is checked until it is appended.
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
