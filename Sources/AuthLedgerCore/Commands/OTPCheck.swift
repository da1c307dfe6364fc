/// What a `verifyOTP` command says: the code the user typed for an OTP.
public struct OTPCheck: Sendable, Equatable {
    public var user: String
    public var otpId: String
    /// The code; never stored or logged.
    public var code: String

    public init(user: String, otpId: String, code: String) {
        self.user = user
        self.otpId = otpId
        self.code = code
    }
}
