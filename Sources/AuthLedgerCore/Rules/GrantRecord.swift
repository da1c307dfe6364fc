/// A grant made by an `otp.verified`: one `via: otp` registration may use it before it expires.
public struct GrantRecord: Equatable, Sendable {
    /// The grant's id, unique within its user.
    public var grantId: String
    /// The OTP whose verification created it.
    public var otpId: String
    /// From this time on it can no longer be used (`grant_invalid`).
    public var expiresAt: Timestamp
    /// The device whose registration used it up; nil while unused.
    public var usedBy: String?

    /// The memberwise initializer, for the log's codec and tests.
    package init(grantId: String, otpId: String, expiresAt: Timestamp, usedBy: String? = nil) {
        self.grantId = grantId
        self.otpId = otpId
        self.expiresAt = expiresAt
        self.usedBy = usedBy
    }
}
