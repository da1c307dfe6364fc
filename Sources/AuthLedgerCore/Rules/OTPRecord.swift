/// One one-time code issued to a user (SPEC 2.7): never the code itself, only its HMAC.
public struct OTPRecord: Equatable, Sendable {
    /// The OTP's id, unique within its user.
    public var otpId: String
    /// Where the code was sent: `email` or `sms`.
    public var channel: String
    /// The masked address or number it was sent to (`a***@example.com`); the erased marker after an erasure.
    public var target: String
    /// The lower-case hex HMAC-SHA-256 of the code under the server key (SPEC 2.8).
    public var codeHash: String
    /// The `at` of its `otp.issued`.
    public var issuedAt: Timestamp
    /// From this time on the code can no longer be verified or failed (`otp_expired`).
    public var expiresAt: Timestamp
    /// How many failures lock it (`otp_locked`).
    public var maxAttempts: Int64
    /// How many `otp.failed` were recorded for it.
    public var failures: Int64 = 0
    /// Whether an `otp.verified` was recorded for it (it is then used up).
    public var verified = false

    /// The memberwise initializer, for the log's codec and tests.
    package init(otpId: String, channel: String, target: String, codeHash: String, issuedAt: Timestamp, expiresAt: Timestamp, maxAttempts: Int64, failures: Int64 = 0, verified: Bool = false) {
        self.otpId = otpId
        self.channel = channel
        self.target = target
        self.codeHash = codeHash
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.maxAttempts = maxAttempts
        self.failures = failures
        self.verified = verified
    }
}
