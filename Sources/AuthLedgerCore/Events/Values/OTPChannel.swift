/// Where a one-time code is sent (`otp.issued`'s `channel`).
public enum OTPChannel: String, CaseIterable, Sendable, Codable {
    /// By e-mail, or by text message.
    case email, sms

    /// The channel named `text`, or `invalid_event` naming `path`.
    public init(parsing text: String, path: String) throws(LedgerError) {
        guard let c = OTPChannel(rawValue: text) else { throw .invalid("\"\(path)\" must be one of email, sms", field: path) }
        self = c
    }
}
