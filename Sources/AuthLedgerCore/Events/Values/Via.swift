/// How a device came to be trusted (SPEC 1.3 `via`), with the proof it names: a
/// registration `via: otp` carries its grant and only it, `via: trusted_device` its
/// approved challenge and only it, so a mismatched pairing cannot be built.
public enum Via: Hashable, Sendable {
    /// The user's first device: no proof (refused once the user ever had one).
    case initial
    /// The device asked for verification and the emailed link was followed.
    case emailLink
    /// A verified one-time code's grant, used up by the registration.
    case otp(grantId: String)
    /// A login challenge the user's trusted device approved, used up by the registration.
    case trustedDevice(challengeId: String)
    /// An administrator registered it.
    case admin

    /// The names `via` may have, as recorded.
    public static let names = ["initial", "email_link", "otp", "trusted_device", "admin"]

    /// `invalid_event` naming `path` unless `name` is one of ``names``.
    static func checkName(_ name: String, path: String) throws(LedgerError) {
        guard names.contains(name) else { throw .invalid("\"\(path)\" must be one of \(names.sorted().joined(separator: ", "))", field: path) }
    }

    /// The recorded name: `initial`, `email_link`, `otp`, `trusted_device` or `admin`.
    public var name: String {
        switch self {
        case .initial: "initial"
        case .emailLink: "email_link"
        case .otp: "otp"
        case .trustedDevice: "trusted_device"
        case .admin: "admin"
        }
    }

    /// The grant of `via: otp`; nil otherwise.
    public var grantId: String? { if case let .otp(g) = self { return g }; return nil }
    /// The challenge of `via: trusted_device`; nil otherwise.
    public var challengeId: String? { if case let .trustedDevice(c) = self { return c }; return nil }

    /// A `via` from its parts as text gives them (a recorded event's `data`, a command's
    /// options): a known name, paired with exactly the proof it needs. Field names in errors
    /// are `prefix` + the field (`data.` for events, none for commands).
    public init(name: String, grantId: String?, challengeId: String?, prefix: String) throws(LedgerError) {
        try Via.checkName(name, path: prefix + "via")
        try EventDecoder.checkPairing(via: name, grant: grantId != nil, challenge: challengeId != nil, prefix: prefix)
        switch name {
        case "initial": self = .initial
        case "email_link": self = .emailLink
        case "otp": self = .otp(grantId: grantId!)
        case "trusted_device": self = .trustedDevice(challengeId: challengeId!)
        default: self = .admin
        }
    }

    /// What a command's options say: nil when they leave `via` to be inferred from the
    /// user's state (no name, no proof); a grant alone is `otp`, a challenge alone
    /// `trusted_device`; both at once, or a name without its proof, are refused.
    public static func given(name: String?, grantId: String?, challengeId: String?) throws(LedgerError) -> Via? {
        if let name { return try Via(name: name, grantId: grantId, challengeId: challengeId, prefix: "") }
        try EventDecoder.checkPairing(via: nil, grant: grantId != nil, challenge: challengeId != nil, prefix: "")
        if let grantId { return .otp(grantId: grantId) }
        if let challengeId { return .trustedDevice(challengeId: challengeId) }
        return nil
    }
}
