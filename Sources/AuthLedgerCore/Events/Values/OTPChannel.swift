/// Where a one-time code is sent (`otp.issued`'s `channel`).
public enum OTPChannel: String, NamedValue, Sendable, Codable {
    /// By e-mail, or by text message.
    case email, sms
}
