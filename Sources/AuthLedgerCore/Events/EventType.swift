/// The event types of SPEC 1.3. Raw values are the storage tags: never renumber.
public enum EventType: UInt8, CaseIterable, Sendable {
    /// `policy.set`: changes policy settings from its position on (stream `$system`).
    case policySet = 1
    /// `device.verification_requested`: an unrecognised device signed in and waits for verification.
    case verificationRequested = 2
    /// `device.registered`: a device was trusted, `via` saying how.
    case registered = 3
    /// `device.renamed`.
    case renamed = 4
    /// `device.accessed`: an active device was used (moves its `lastAccessAt`).
    case accessed = 5
    /// `device.push_token_updated`.
    case pushTokenUpdated = 6
    /// `device.revoked`: one pending or active device was revoked.
    case revoked = 7
    /// `device.all_revoked`: every pending and active device of the user was revoked.
    case allRevoked = 8
    /// `challenge.issued`: a device asks the user's trusted devices to approve an action.
    case challengeIssued = 9
    /// `challenge.approved`.
    case challengeApproved = 10
    /// `challenge.denied`.
    case challengeDenied = 11
    /// `challenge.expired`: records that a challenge's time ran out (it is expired from `expiresAt` on even without it).
    case challengeExpired = 12
    /// `otp.issued`: a one-time code was sent; only its HMAC is recorded.
    case otpIssued = 13
    /// `otp.failed`: a wrong code was given for the OTP.
    case otpFailed = 14
    /// `otp.verified`: the right code was given; it creates a grant.
    case otpVerified = 15
    /// `user.erased`: the user's personal values were erased (SPEC 1.5); appended by erasure only.
    case userErased = 16
    /// `device.key_rotated`: an active device's key was replaced, signed by its old key.
    case keyRotated = 17

    /// The type's name as written in events (`device.registered`, …).
    public var name: String {
        switch self {
        case .policySet: "policy.set"
        case .verificationRequested: "device.verification_requested"
        case .registered: "device.registered"
        case .renamed: "device.renamed"
        case .accessed: "device.accessed"
        case .pushTokenUpdated: "device.push_token_updated"
        case .revoked: "device.revoked"
        case .allRevoked: "device.all_revoked"
        case .challengeIssued: "challenge.issued"
        case .challengeApproved: "challenge.approved"
        case .challengeDenied: "challenge.denied"
        case .challengeExpired: "challenge.expired"
        case .otpIssued: "otp.issued"
        case .otpFailed: "otp.failed"
        case .otpVerified: "otp.verified"
        case .userErased: "user.erased"
        case .keyRotated: "device.key_rotated"
        }
    }

    private static let byName: [String: EventType] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    /// The type with this name; nil for an unknown name.
    public init?(name: String) {
        guard let t = EventType.byName[name] else { return nil }
        self = t
    }

    /// Fields of `data`: each with whether it is required.
    public var schema: [(field: Field, required: Bool)] {
        switch self {
        case .policySet:
            return [(.coolingSeconds, false), (.challengeTtlSeconds, false), (.otpTtlSeconds, false),
                    (.otpMaxAttempts, false), (.otpPerHour, false), (.grantTtlSeconds, false),
                    (.maxDevices, false), (.protectCurrentDevice, false), (.requireSignedApprovals, false),
                    (.verificationLinkTtlSeconds, false)]
        case .verificationRequested:
            return [(.deviceId, true), (.name, false), (.kind, false), (.platform, false), (.channel, false),
                    (.verificationId, false), (.linkHash, false), (.linkExpiresAt, false)]
        case .registered:
            return [(.deviceId, true), (.name, true), (.kind, true), (.platform, false), (.appId, false),
                    (.pushToken, false), (.binding, true), (.via, true), (.grantId, false), (.challengeId, false),
                    (.publicKey, false), (.verificationId, false)]
        case .renamed: return [(.deviceId, true), (.name, true)]
        case .accessed: return [(.deviceId, true)]
        case .pushTokenUpdated: return [(.deviceId, true), (.pushToken, true)]
        case .revoked: return [(.deviceId, true), (.reason, false)]
        case .allRevoked: return [(.reason, false)]
        case .challengeIssued:
            return [(.challengeId, true), (.action, true), (.requestingDeviceId, true), (.expiresAt, true), (.context, false),
                    (.nonce, false)]
        case .challengeApproved:
            return [(.challengeId, true), (.approverDeviceId, true), (.userVerified, false), (.signature, false)]
        case .challengeDenied: return [(.challengeId, true), (.approverDeviceId, true), (.signature, false)]
        case .challengeExpired: return [(.challengeId, true)]
        case .otpIssued:
            return [(.otpId, true), (.channel, true), (.target, true), (.codeHash, true), (.expiresAt, true), (.maxAttempts, true)]
        case .otpFailed: return [(.otpId, true)]
        case .otpVerified: return [(.otpId, true), (.grantId, true), (.grantExpiresAt, true)]
        case .userErased: return [(.reason, false)]
        case .keyRotated: return [(.deviceId, true), (.publicKey, true), (.signature, true)]
        }
    }

    /// Whether this event type opens a cooling window (SPEC 2.5); `via: initial` is exempt.
    var isCoolingOperation: Bool {
        self == .registered || self == .renamed || self == .revoked || self == .allRevoked
    }
}
