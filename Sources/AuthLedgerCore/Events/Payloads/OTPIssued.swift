/// `otp.issued`: a one-time code was sent; only its HMAC is recorded.
public struct OTPIssued: Equatable, Sendable {
    /// The one-time code's id.
    public var otpId: String
    /// Where the code went: `email` or `sms`.
    public var channel: OTPChannel
    /// The masked address it was sent to; nil once erased.
    public var target: String?
    /// Lower-case hex HMAC-SHA-256 of the code under the server's key.
    public var codeHash: String
    /// From this time on it is expired.
    public var expiresAt: Timestamp
    /// How many wrong codes lock it.
    public var maxAttempts: Int64

    /// A payload with these fields; nothing is checked until it is appended.
    public init(otpId: String, channel: OTPChannel, target: String?, codeHash: String, expiresAt: Timestamp, maxAttempts: Int64) {
        self.otpId = otpId
        self.channel = channel
        self.target = target
        self.codeHash = codeHash
        self.expiresAt = expiresAt
        self.maxAttempts = maxAttempts
    }

    init(_ d: EventData) throws(LedgerError) {
        let t = EventType.otpIssued
        try self.init(otpId: d.need(.otpId, t, EventData.string),
                      channel: OTPChannel(parsing: d.need(.channel, t, EventData.string), path: "data.channel"),
                      target: d.string(.target), codeHash: d.need(.codeHash, t, EventData.string),
                      expiresAt: d.need(.expiresAt, t, EventData.time), maxAttempts: d.need(.maxAttempts, t, EventData.int))
    }

    var data: EventData {
        EventData([(.channel, .text(channel)), (.codeHash, .text(codeHash)), (.expiresAt, .time(expiresAt)),
                   (.maxAttempts, .int(maxAttempts)), (.otpId, .text(otpId)), (.target, .text(target))])
    }
}
