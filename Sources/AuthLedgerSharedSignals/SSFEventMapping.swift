import AuthLedger

/// Which Security Events the ledger's events become (docs/SHARED-SIGNALS.md has the
/// table), and how one is written: one event per SET, the subject a `complex`
/// subject identifier (`user`, and `device` when the event is about one, both
/// `opaque`), `event_timestamp` the event's `at` (seconds), `initiating_entity`
/// from `meta.actor`, and a non-empty `reason_admin` (the CAEP interoperability
/// profile requires it on `session-revoked` and `credential-change`).
///
/// No personal value (SPEC 7: names, push tokens, OTP targets) goes into a SET:
/// device names are not sent as `friendly_name`.
public enum SSFEventType: String, CaseIterable, Sendable {
    /// CAEP `credential-change`: a device was registered, renamed, revoked, or its push token or key changed.
    case credentialChange = "https://schemas.openid.net/secevent/caep/event-type/credential-change"
    /// CAEP `session-revoked`: every device of the user was revoked.
    case sessionRevoked = "https://schemas.openid.net/secevent/caep/event-type/session-revoked"
    /// RISC `recovery-activated`: a one-time code was verified (account recovery).
    case recoveryActivated = "https://schemas.openid.net/secevent/risc/event-type/recovery-activated"

    /// SSF's own events (not ledger events): always allowed on a stream.
    public static let verification = "https://schemas.openid.net/secevent/ssf/event-type/verification"

    /// The ledger event types that become this event type.
    public var ledgerTypes: Set<EventType> {
        switch self {
        case .credentialChange: [.registered, .renamed, .pushTokenUpdated, .revoked, .keyRotated]
        case .sessionRevoked: [.allRevoked]
        case .recoveryActivated: [.otpVerified]
        }
    }

    /// The feed filter of a stream delivering `types`.
    static func filter(_ types: [SSFEventType]) -> EventFilter {
        EventFilter(types: types.reduce(into: Set<EventType>()) { $0.formUnion($1.ledgerTypes) })
    }
}

enum SSFEventMapping {
    /// The SET event (type URI and body) and subject of a ledger event, or nil when
    /// the event is not delivered as a Security Event.
    static func map(_ e: RecordedEvent) -> (type: SSFEventType, subject: JSON, body: JSON)? {
        let ev = e.event
        guard let user = ev.user else { return nil }
        let deviceId = ev.data.string(.deviceId)
        let type: SSFEventType
        var members: [(String, JSON)] = []
        var reason: String
        switch ev.type {
        case .registered:
            type = .credentialChange
            members = credential(ev, change: "create")
            let via = ev.data.string(.via) ?? "initial"
            reason = "Device registered (via \(via))"
            // Device proofs (reference section 11) say so: a redeemed link, a proof-of-possession key.
            if ev.data[.verificationId] != nil { reason += ", email link redeemed" }
            if ev.data[.publicKey] != nil { reason += ", with a device key" }
        case .renamed:
            type = .credentialChange
            members = credential(ev, change: "update")
            reason = "Device renamed"
        case .pushTokenUpdated:
            type = .credentialChange
            members = credential(ev, change: "update")
            reason = "Device push token updated"
        case .keyRotated:
            type = .credentialChange
            members = credential(ev, change: "update")
            reason = "Device key rotated, signed by the previous key"
        case .revoked:
            type = .credentialChange
            members = credential(ev, change: "revoke")
            reason = "Device revoked"
        case .allRevoked:
            type = .sessionRevoked
            reason = "All devices of the user revoked; every session ends"
        case .otpVerified:
            type = .recoveryActivated
            reason = "One-time code verified: the user may register a device without a trusted one (account recovery)"
        default:
            return nil
        }
        if let r = ev.data.string(.reason), !r.isEmpty { reason += ": " + r }
        if let entity = initiatingEntity(ev.actor) { members.append(("initiating_entity", .string(entity))) }
        members.append(("reason_admin", .object([("en", .string(reason))])))
        members.append(("event_timestamp", .int(ev.at.milliseconds / 1000)))
        var subject: [(String, JSON)] = [("format", .string("complex")), ("user", opaque(user))]
        if let deviceId, type != .sessionRevoked { subject.append(("device", opaque(deviceId))) }
        return (type, .object(subject), .object(members))
    }

    /// `credential_type` `app`: a device is an app-bound credential of the user.
    private static func credential(_ e: Event, change: String) -> [(String, JSON)] {
        [("credential_type", .string("app")), ("change_type", .string(change))]
    }

    static func opaque(_ id: String) -> JSON {
        .object([("format", .string("opaque")), ("id", .string(id))])
    }

    /// CAEP's `initiating_entity` from `meta.actor`: `device:<id>` and `user` are the
    /// end user, `admin:<name>` an administrator, `service:<name>` and `system` the
    /// platform; no actor: left out.
    static func initiatingEntity(_ actor: String?) -> String? {
        guard let actor else { return nil }
        if actor == "user" || actor.hasPrefix("device:") { return "user" }
        if actor.hasPrefix("admin:") { return "admin" }
        if actor == "system" || actor.hasPrefix("service:") { return "system" }
        return nil
    }
}
