/// How an unrecognised device is verified (`device.verification_requested`'s `channel`).
public enum VerificationChannel: String, CaseIterable, Sendable, Codable {
    /// A link sent by e-mail.
    case emailLink = "email_link"

    /// The channel named `text`, or `invalid_event` naming `path`.
    public init(parsing text: String, path: String) throws(LedgerError) {
        guard let c = VerificationChannel(rawValue: text) else { throw .invalid("\"\(path)\" must be one of email_link", field: path) }
        self = c
    }
}
