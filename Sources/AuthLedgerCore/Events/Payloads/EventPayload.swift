/// What an event says, typed: one case per event type (SPEC 1.3), one value type per payload.
///
/// The rules (`UserState.evolve`) and the command side (`decide`) work on payloads; the log
/// keeps `data` (``EventData``), the recorded field-by-field form that is hashed, exported and
/// erased value by value. A payload's ``data`` is exactly the `data` the event records, and
/// reading one back from checked `data` never fails (tested over every fixture event).
public enum EventPayload: Equatable, Sendable {
    /// `policy.set`.
    case policySet(PolicySet)
    /// `device.verification_requested`.
    case verificationRequested(DeviceVerificationRequested)
    /// `device.registered`.
    case registered(DeviceRegistered)
    /// `device.renamed`.
    case renamed(DeviceRenamed)
    /// `device.accessed`.
    case accessed(DeviceAccessed)
    /// `device.push_token_updated`.
    case pushTokenUpdated(DevicePushTokenUpdated)
    /// `device.revoked`.
    case revoked(DeviceRevoked)
    /// `device.all_revoked`.
    case allRevoked(AllDevicesRevoked)
    /// `challenge.issued`.
    case challengeIssued(ChallengeIssued)
    /// `challenge.approved`.
    case challengeApproved(ChallengeApproved)
    /// `challenge.denied`.
    case challengeDenied(ChallengeDenied)
    /// `challenge.expired`.
    case challengeExpired(ChallengeExpired)
    /// `otp.issued`.
    case otpIssued(OTPIssued)
    /// `otp.failed`.
    case otpFailed(OTPFailed)
    /// `otp.verified`.
    case otpVerified(OTPVerified)
    /// `user.erased`.
    case userErased(UserErased)
    /// `device.key_rotated`.
    case keyRotated(DeviceKeyRotated)

    /// The payload of an event of `type` with this `data`; `invalid_event` when `data` lacks
    /// a field the type requires or holds a value its type does not allow.
    public init(_ type: EventType, _ data: EventData) throws(LedgerError) {
        switch type {
        case .policySet: self = .policySet(PolicySet(data))
        case .verificationRequested: self = .verificationRequested(try DeviceVerificationRequested(data))
        case .registered: self = .registered(try DeviceRegistered(data))
        case .renamed: self = .renamed(try DeviceRenamed(data))
        case .accessed: self = .accessed(try DeviceAccessed(data))
        case .pushTokenUpdated: self = .pushTokenUpdated(try DevicePushTokenUpdated(data))
        case .revoked: self = .revoked(try DeviceRevoked(data))
        case .allRevoked: self = .allRevoked(AllDevicesRevoked(data))
        case .challengeIssued: self = .challengeIssued(try ChallengeIssued(data))
        case .challengeApproved: self = .challengeApproved(try ChallengeApproved(data))
        case .challengeDenied: self = .challengeDenied(try ChallengeDenied(data))
        case .challengeExpired: self = .challengeExpired(try ChallengeExpired(data))
        case .otpIssued: self = .otpIssued(try OTPIssued(data))
        case .otpFailed: self = .otpFailed(try OTPFailed(data))
        case .otpVerified: self = .otpVerified(try OTPVerified(data))
        case .userErased: self = .userErased(UserErased(data))
        case .keyRotated: self = .keyRotated(try DeviceKeyRotated(data))
        }
    }

    /// The event type this payload belongs to.
    public var type: EventType {
        switch self {
        case .policySet: .policySet
        case .verificationRequested: .verificationRequested
        case .registered: .registered
        case .renamed: .renamed
        case .accessed: .accessed
        case .pushTokenUpdated: .pushTokenUpdated
        case .revoked: .revoked
        case .allRevoked: .allRevoked
        case .challengeIssued: .challengeIssued
        case .challengeApproved: .challengeApproved
        case .challengeDenied: .challengeDenied
        case .challengeExpired: .challengeExpired
        case .otpIssued: .otpIssued
        case .otpFailed: .otpFailed
        case .otpVerified: .otpVerified
        case .userErased: .userErased
        case .keyRotated: .keyRotated
        }
    }

    /// The recorded `data` of this payload.
    public var data: EventData {
        switch self {
        case let .policySet(p): p.data
        case let .verificationRequested(p): p.data
        case let .registered(p): p.data
        case let .renamed(p): p.data
        case let .accessed(p): p.data
        case let .pushTokenUpdated(p): p.data
        case let .revoked(p): p.data
        case let .allRevoked(p): p.data
        case let .challengeIssued(p): p.data
        case let .challengeApproved(p): p.data
        case let .challengeDenied(p): p.data
        case let .challengeExpired(p): p.data
        case let .otpIssued(p): p.data
        case let .otpFailed(p): p.data
        case let .otpVerified(p): p.data
        case let .userErased(p): p.data
        case let .keyRotated(p): p.data
        }
    }
}

extension Event {
    /// An event with this typed content (its `type` and `data` come from `payload`).
    public init(id: EventID? = nil, user: String?, at: Timestamp, payload: EventPayload, meta: StringMap? = nil,
                personal: PersonalValues? = nil) {
        self.init(id: id, type: payload.type, user: user, at: at, data: payload.data, meta: meta, personal: personal)
    }

    /// What the event says, typed; `invalid_event` when its `data` does not fit its type
    /// (never for an event the decoder or the log produced).
    public var payload: EventPayload {
        get throws(LedgerError) { try EventPayload(type, data) }
    }
}
