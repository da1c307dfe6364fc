/// A request to change a user's device trust. The ledger decides which events follow.
public enum Command: Sendable {
    /// An unrecognised device signed in: appends `device.verification_requested` (channel `email_link`), the name trimmed.
    case requestVerification(user: String, deviceId: String, name: String?, kind: String?, platform: String?)
    /// Trusts a device: appends `device.registered` (see ``Registration``).
    case register(Registration)
    /// Renames an active device (`device.renamed`), the name trimmed.
    case rename(user: String, deviceId: String, name: String)
    /// Revokes one device (`device.revoked`); the result's `sessionEnded` is true when the actor is that device.
    case revoke(user: String, deviceId: String, reason: String?)
    /// Revokes every device of the user (`device.all_revoked`); the result's `sessionEnded` is true.
    case revokeAll(user: String, reason: String?)
    /// Records that an active device was used (`device.accessed`).
    case access(user: String, deviceId: String)
    /// Replaces an active device's push token (`device.push_token_updated`).
    case updatePushToken(user: String, deviceId: String, pushToken: String)
    /// Issues a challenge with a new id that expires `challengeTtlSeconds` from now; from an active
    /// device it is approved by that device at once (SPEC 2.6).
    case issueChallenge(user: String, requestingDeviceId: String, action: String, context: StringMap?)
    /// Approves a challenge by device `deviceId` (`challenge.approved`).
    case approve(user: String, challengeId: String, deviceId: String, userVerified: Bool?)
    /// Denies a challenge by device `deviceId` (`challenge.denied`).
    case deny(user: String, challengeId: String, deviceId: String)
    /// Records a challenge's expiry (`challenge.expired`): refused before its `expiresAt`.
    case expireChallenge(user: String, challengeId: String)
    /// Issues a one-time code to `target` over `channel` (`email` or `sms`): the result carries the code, once;
    /// the log holds only its HMAC and the masked target.
    case sendOTP(user: String, channel: String, target: String)
    /// Checks a code: a right one appends `otp.verified` and returns a grant; a wrong one appends
    /// `otp.failed`, durably, and the ledger then throws `otp_invalid` carrying it in ``LedgerError/appended`` (SPEC 2.7).
    case verifyOTP(user: String, otpId: String, code: String)
    /// Changes the policy settings in `data` (`policy.set`, at least one setting).
    case setPolicy(EventData)

    /// What a command's optional fields mean when a caller leaves them out (SPEC 2, 5), in
    /// one place for the CLI and the HTTP API.
    public enum Default {
        /// `register`: the device's `kind`.
        public static let kind = "other"
        /// `register`: the device's `binding`.
        public static let binding = "permanent"
        /// `issueChallenge`: the `action` to approve.
        public static let action = "login"
    }

    /// A `register` command; the fields a caller leaves out take their defaults (``Default``).
    public static func register(user: String, deviceId: String, name: String, kind: String = Default.kind,
                                platform: String? = nil, appId: String? = nil, pushToken: String? = nil,
                                binding: String = Default.binding, via: String? = nil, grantId: String? = nil,
                                challengeId: String? = nil) -> Command {
        .register(Registration(user: user, deviceId: deviceId, name: name, kind: kind, platform: platform, appId: appId,
                               pushToken: pushToken, binding: binding, via: via, grantId: grantId, challengeId: challengeId))
    }

    /// The user the command is about; nil for `setPolicy` (stream `$system`).
    public var user: String? {
        switch self {
        case let .register(r): return r.user
        case let .requestVerification(u, _, _, _, _),
             let .rename(u, _, _), let .revoke(u, _, _), let .revokeAll(u, _), let .access(u, _),
             let .updatePushToken(u, _, _), let .issueChallenge(u, _, _, _), let .approve(u, _, _, _),
             let .deny(u, _, _), let .expireChallenge(u, _), let .sendOTP(u, _, _), let .verifyOTP(u, _, _):
            return u
        case .setPolicy: return nil
        }
    }
}

/// What a command did: the events it appended and what the caller gets back.
public struct CommandResult: Sendable {
    /// The events appended, in order.
    public var events: [RecordedEvent] = []
    /// The challenge issued, approved, denied or expired.
    public var challengeId: String?
    /// The OTP issued or checked.
    public var otpId: String?
    /// The OTP code: returned once to the caller, never stored or logged.
    public var code: String?
    /// The grant a verified OTP created: what a `via: otp` registration names.
    public var grantId: String?
    /// The caller's own device was revoked, or all were.
    public var sessionEnded = false
    /// A refusal that still appends its events (`otp_invalid` appends `otp.failed`): the ledger
    /// commits them, then throws it with them in ``LedgerError/appended``.
    package var refusal: LedgerError?

    /// An empty result: nothing appended.
    public init() {}

    /// The result as the CLI's `--json` and the HTTP API answer it: `events` as `seq` and `type`,
    /// then the ids, the code and `sessionEnded` that are set (never `refusal`).
    public var json: JSON {
        var m: [(String, JSON)] = [("events", .array(events.map { .object([("seq", .int(Int64($0.seq))), ("type", .string($0.event.type.name))]) }))]
        if let challengeId { m.append(("challengeId", .string(challengeId))) }
        if let otpId { m.append(("otpId", .string(otpId))) }
        if let code { m.append(("code", .string(code))) }
        if let grantId { m.append(("grantId", .string(grantId))) }
        if sessionEnded { m.append(("sessionEnded", .bool(true))) }
        return .object(m)
    }
}

/// The command side's decision: events to append (validated again by `evolve`).
package struct Decision {
    package var events: [Event] = []
    package var result = CommandResult()
}

/// `decide(command, state, now)`: pure except for the random ids and codes it draws.
package enum Decider {
    static func newId() -> String { EventID.random().description }

    package static func decide(_ command: Command, state: UserState, policy: Policy, now: Timestamp,
                       meta: StringMap?, secrets: () throws -> OTPSecrets) throws -> Decision {
        var d = Decision()
        func emit(_ type: EventType, _ fields: [(Field, FieldValue?)]) {
            var data = EventData()
            for (f, v) in fields { data[f] = v }
            d.events.append(Event(type: type, user: command.user, at: now, data: data, meta: meta))
        }
        func s(_ v: String?) -> FieldValue? { v.map { .string($0) } }
        let actor = meta?["actor"]

        switch command {
        case let .requestVerification(_, deviceId, name, kind, platform):
            emit(.verificationRequested, [(.deviceId, s(deviceId)), (.name, s(name.map(EventDecoder.trimName))),
                                          (.kind, s(kind)), (.platform, s(platform)), (.channel, s("email_link"))])

        case let .register(r):
            let inferred = r.via ?? (r.grantId != nil ? "otp" : r.challengeId != nil ? "trusted_device"
                : state.devices[r.deviceId]?.status == .pending ? "email_link" : "initial")
            emit(.registered, [(.deviceId, s(r.deviceId)), (.name, s(EventDecoder.trimName(r.name))), (.kind, s(r.kind)),
                               (.platform, s(r.platform)), (.appId, s(r.appId)), (.pushToken, s(r.pushToken)),
                               (.binding, s(r.binding)), (.via, s(inferred)), (.grantId, s(r.grantId)), (.challengeId, s(r.challengeId))])

        case let .rename(_, deviceId, name):
            emit(.renamed, [(.deviceId, s(deviceId)), (.name, s(EventDecoder.trimName(name)))])

        case let .revoke(_, deviceId, reason):
            emit(.revoked, [(.deviceId, s(deviceId)), (.reason, s(reason))])
            d.result.sessionEnded = actor == "device:\(deviceId)"

        case let .revokeAll(_, reason):
            emit(.allRevoked, [(.reason, s(reason))])
            d.result.sessionEnded = true

        case let .access(_, deviceId):
            emit(.accessed, [(.deviceId, s(deviceId))])

        case let .updatePushToken(_, deviceId, pushToken):
            emit(.pushTokenUpdated, [(.deviceId, s(deviceId)), (.pushToken, s(pushToken))])

        case let .issueChallenge(_, requester, action, context):
            let cid = newId()
            emit(.challengeIssued, [(.challengeId, s(cid)), (.action, s(action)), (.requestingDeviceId, s(requester)),
                                    (.expiresAt, .time(now.adding(seconds: policy.challengeTtlSeconds))),
                                    (.context, context.map { .map($0) })])
            // A device that is already trusted approves its own challenge at once.
            if state.devices[requester]?.status == .active {
                emit(.challengeApproved, [(.challengeId, s(cid)), (.approverDeviceId, s(requester))])
            }
            d.result.challengeId = cid

        case let .approve(_, cid, deviceId, userVerified):
            emit(.challengeApproved, [(.challengeId, s(cid)), (.approverDeviceId, s(deviceId)), (.userVerified, userVerified.map { .bool($0) })])
            d.result.challengeId = cid

        case let .deny(_, cid, deviceId):
            emit(.challengeDenied, [(.challengeId, s(cid)), (.approverDeviceId, s(deviceId))])
            d.result.challengeId = cid

        case let .expireChallenge(_, cid):
            emit(.challengeExpired, [(.challengeId, s(cid))])
            d.result.challengeId = cid

        case let .sendOTP(user, channel, target):
            guard channel == "email" || channel == "sms" else { throw LedgerError.invalid("channel must be email or sms", field: "channel") }
            let masked = try OTPSecrets.mask(target, channel: channel)
            let oid = newId()
            let code = OTPSecrets.newCode()
            let codeHash = try secrets().codeHash(user: user, otpId: oid, code: code)
            emit(.otpIssued, [(.otpId, s(oid)), (.channel, s(channel)), (.target, s(masked)), (.codeHash, s(codeHash)),
                              (.expiresAt, .time(now.adding(seconds: policy.otpTtlSeconds))), (.maxAttempts, .int(policy.otpMaxAttempts))])
            d.result.otpId = oid
            d.result.code = code

        case let .verifyOTP(user, oid, code):
            let otp = try state.usableOTP(oid, at: now)
            d.result.otpId = oid
            if try secrets().matches(user: user, otpId: oid, code: code, codeHash: otp.codeHash) {
                let gid = newId()
                emit(.otpVerified, [(.otpId, s(oid)), (.grantId, s(gid)), (.grantExpiresAt, .time(now.adding(seconds: policy.grantTtlSeconds)))])
                d.result.grantId = gid
            } else {
                emit(.otpFailed, [(.otpId, s(oid))])
                let remaining = Int(max(0, otp.maxAttempts - otp.failures - 1))
                d.result.refusal = LedgerError(.otpInvalid, "wrong code; \(remaining) attempt\(remaining == 1 ? "" : "s") left",
                                               remainingAttempts: remaining, field: "code")
            }

        case let .setPolicy(data):
            guard !data.entries.isEmpty else { throw LedgerError.invalid("set-policy needs at least one setting") }
            d.events.append(Event(type: .policySet, user: nil, at: now, data: data, meta: meta))
        }
        return d
    }
}
