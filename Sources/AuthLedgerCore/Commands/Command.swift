/// A request to change a user's device trust. The ledger decides which events follow.
///
/// Each case carries a small value; the static functions with labelled text arguments
/// (`.rename(user:deviceId:name:)`, `.register(user:deviceId:name:kind:…)`) build them from
/// what a CLI option or a JSON body gives, checking the named values (`kind`, `binding`,
/// `via`, `channel`) once, there.
public enum Command: Sendable, Equatable {
    /// An unrecognised device signed in: appends `device.verification_requested` (channel `email_link`), the name trimmed.
    case requestVerification(VerificationRequest)
    /// Trusts a device: appends `device.registered` (see ``Registration``).
    case register(Registration)
    /// Renames an active device (`device.renamed`), the name trimmed.
    case rename(Rename)
    /// Revokes one device (`device.revoked`); the result's `sessionEnded` is true when the actor is that device.
    case revoke(Revocation)
    /// Revokes every device of the user (`device.all_revoked`); the result's `sessionEnded` is true.
    case revokeAll(RevocationOfAll)
    /// Records that an active device was used (`device.accessed`).
    case access(Access)
    /// Replaces an active device's push token (`device.push_token_updated`).
    case updatePushToken(PushTokenUpdate)
    /// Issues a challenge with a new id that expires `challengeTtlSeconds` from now; from an active
    /// device it is approved by that device at once (SPEC 2.6).
    case issueChallenge(ChallengeRequest)
    /// Approves a challenge (`challenge.approved`).
    case approve(Approval)
    /// Denies a challenge (`challenge.denied`).
    case deny(Denial)
    /// Records a challenge's expiry (`challenge.expired`): refused before its `expiresAt`.
    case expireChallenge(ChallengeExpiry)
    /// Issues a one-time code: the result carries the code, once; the log holds only its HMAC
    /// and the masked target.
    case sendOTP(OTPRequest)
    /// Checks a code: a right one appends `otp.verified` and returns a grant; a wrong one appends
    /// `otp.failed`, durably, and the ledger then throws `otp_invalid` carrying it in ``LedgerError/appended`` (SPEC 2.7).
    case verifyOTP(OTPCheck)
    /// Changes the policy settings it names (`policy.set`, at least one setting).
    case setPolicy(PolicySet)
    /// Replaces an active device's key (`device.key_rotated`), signed by the old key.
    case rotateKey(KeyRotation)
    /// Registers the device of the verification request whose link token hashes to
    /// `linkHash` (`device.registered`, `via: email_link`); `link_invalid` / `link_expired`.
    case redeemLink(LinkRedemption)

    /// What a command's optional fields mean when a caller leaves them out (SPEC 2, 5), in
    /// one place for the CLI, the HTTP API and Swift callers.
    public enum Default {
        /// `register`: the device's `kind`.
        public static let kind = DeviceKind.other
        /// `register`: the device's `binding`.
        public static let binding = Binding.permanent
        /// `issueChallenge`: the `action` to approve.
        public static let action = "login"
    }

    /// A `register` command from text (a CLI's options, a JSON body): `kind`, `binding` and `via`
    /// are checked here, and `via` goes with the grant or challenge it needs (nil `via`: `otp`
    /// with a grant, `trusted_device` with a challenge, else inferred from the user's state).
    public static func register(user: String, deviceId: String, name: String, kind: String? = nil,
                                platform: String? = nil, appId: String? = nil, pushToken: String? = nil,
                                binding: String? = nil, via: String? = nil, grantId: String? = nil,
                                challengeId: String? = nil, publicKey: StringMap? = nil) throws(LedgerError) -> Command {
        .register(Registration(user: user, deviceId: deviceId, name: name,
                               kind: try kind.map { k throws(LedgerError) in try DeviceKind(parsing: k, path: "kind") } ?? Default.kind,
                               platform: platform, appId: appId, pushToken: pushToken,
                               binding: try binding.map { b throws(LedgerError) in try Binding(parsing: b, path: "binding") } ?? Default.binding,
                               via: try Via.given(name: via, grantId: grantId, challengeId: challengeId), publicKey: publicKey))
    }

    /// A public JWK given as JSON text (a CLI option); `invalid_event` when it is not a valid
    /// public P-256 or Ed25519 JWK.
    public static func publicKey(json text: String, path: String = "publicKey") throws(LedgerError) -> StringMap {
        guard let json = try? JSON.parse(text) else { throw .invalid("\"\(path)\" is not JSON", field: path) }
        return try publicKey(json, path: path)
    }

    /// A public JWK given as a JSON value (a request body's member); checked as an event's would be.
    public static func publicKey(_ json: JSON, path: String = "publicKey") throws(LedgerError) -> StringMap {
        let m = try EventDecoder.stringMap(json, path)
        _ = try DeviceKey(jwk: m, path: path)
        return m
    }

    /// A `requestVerification` command from text; `kind` is checked here.
    public static func requestVerification(user: String, deviceId: String, name: String?, kind: String?, platform: String?) throws(LedgerError) -> Command {
        .requestVerification(VerificationRequest(user: user, deviceId: deviceId, name: name,
                                                 kind: try kind.map { k throws(LedgerError) in try DeviceKind(parsing: k, path: "kind") },
                                                 platform: platform))
    }

    /// A `rename` command.
    public static func rename(user: String, deviceId: String, name: String) -> Command {
        .rename(Rename(user: user, deviceId: deviceId, name: name))
    }

    /// A `revoke` command.
    public static func revoke(user: String, deviceId: String, reason: String?) -> Command {
        .revoke(Revocation(user: user, deviceId: deviceId, reason: reason))
    }

    /// A `revokeAll` command.
    public static func revokeAll(user: String, reason: String?) -> Command {
        .revokeAll(RevocationOfAll(user: user, reason: reason))
    }

    /// An `access` command.
    public static func access(user: String, deviceId: String) -> Command {
        .access(Access(user: user, deviceId: deviceId))
    }

    /// An `updatePushToken` command.
    public static func updatePushToken(user: String, deviceId: String, pushToken: String) -> Command {
        .updatePushToken(PushTokenUpdate(user: user, deviceId: deviceId, pushToken: pushToken))
    }

    /// An `issueChallenge` command.
    public static func issueChallenge(user: String, requestingDeviceId: String, action: String, context: StringMap?) -> Command {
        .issueChallenge(ChallengeRequest(user: user, requestingDeviceId: requestingDeviceId, action: action, context: context))
    }

    /// An `approve` command.
    public static func approve(user: String, challengeId: String, deviceId: String, userVerified: Bool?, signature: String? = nil) -> Command {
        .approve(Approval(user: user, challengeId: challengeId, deviceId: deviceId, userVerified: userVerified, signature: signature))
    }

    /// A `deny` command.
    public static func deny(user: String, challengeId: String, deviceId: String, signature: String? = nil) -> Command {
        .deny(Denial(user: user, challengeId: challengeId, deviceId: deviceId, signature: signature))
    }

    /// A `rotateKey` command.
    public static func rotateKey(user: String, deviceId: String, publicKey: StringMap, signature: String) -> Command {
        .rotateKey(KeyRotation(user: user, deviceId: deviceId, publicKey: publicKey, signature: signature))
    }

    /// An `expireChallenge` command.
    public static func expireChallenge(user: String, challengeId: String) -> Command {
        .expireChallenge(ChallengeExpiry(user: user, challengeId: challengeId))
    }

    /// A `sendOTP` command from text; `channel` (`email` or `sms`) is checked here.
    public static func sendOTP(user: String, channel: String, target: String) throws(LedgerError) -> Command {
        .sendOTP(OTPRequest(user: user, channel: try OTPChannel(parsing: channel, path: "channel"), target: target))
    }

    /// A `verifyOTP` command.
    public static func verifyOTP(user: String, otpId: String, code: String) -> Command {
        .verifyOTP(OTPCheck(user: user, otpId: otpId, code: code))
    }

    /// The user the command is about; nil for `setPolicy` (stream `$system`).
    public var user: String? {
        switch self {
        case let .requestVerification(c): c.user
        case let .register(c): c.user
        case let .rename(c): c.user
        case let .revoke(c): c.user
        case let .revokeAll(c): c.user
        case let .access(c): c.user
        case let .updatePushToken(c): c.user
        case let .issueChallenge(c): c.user
        case let .approve(c): c.user
        case let .deny(c): c.user
        case let .expireChallenge(c): c.user
        case let .sendOTP(c): c.user
        case let .verifyOTP(c): c.user
        case let .rotateKey(c): c.user
        case let .redeemLink(c): c.user
        case .setPolicy: nil
        }
    }
}
