/// How an unrecognised device is verified (`device.verification_requested`'s `channel`).
public enum VerificationChannel: String, NamedValue, Sendable, Codable {
    /// A link sent by e-mail.
    case emailLink = "email_link"
}
