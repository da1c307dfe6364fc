/// What a `verifyOTP` command says: the code the user typed for an OTP.
public struct OTPCheck: Sendable, Equatable {
    /// The user (stream key) it is about.
    public var user: String
    /// The one-time code's id.
    public var otpId: String
    /// The code; never stored or logged.
    public var code: String

    /// A command with these fields; they are checked when it is executed.
    public init(user: String, otpId: String, code: String) {
        self.user = user
        self.otpId = otpId
        self.code = code
    }
}
