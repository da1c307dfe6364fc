/// Everything the rules need to know about one user's stream, folded from its events.
///
/// `evolve` is the single source of truth for SPEC section 2: import validates with
/// it, replay rebuilds with it, the append path maintains projections with it, and
/// the command side runs it on what it decided before appending.
public struct UserState: Equatable, Sendable {
    /// The user (stream key) this state belongs to.
    public var user: String
    /// The number of events folded in: the stream version of the latest one (0 for none).
    public var version: UInt64 = 0
    /// The `at` of the latest event folded in; a later event may not be earlier (`time_regression`).
    public var lastAt: Timestamp?
    /// The user's devices by id, pending, active and revoked.
    public var devices: [String: DeviceRecord] = [:]
    /// Whether any device was ever registered (`via: initial` is for first devices only).
    public var everRegistered = false
    /// End of the latest cooling window.
    public var coolingUntil: Timestamp?
    /// The user's challenges by id, resolved or not.
    public var challenges: [String: ChallengeRecord] = [:]
    /// The user's OTPs by id.
    public var otps: [String: OTPRecord] = [:]
    /// The latest issued OTP: the only one that may still be verified or failed.
    public var latestOtpId: String?
    /// Issue times of OTPs within the last hour before `lastAt` (rate limit).
    public var otpIssueTimes: [Timestamp] = []
    /// The grants made by verified OTPs, by id.
    public var grants: [String: GrantRecord] = [:]
    /// Whether personal values of this user were erased (SPEC 1.5): a `user.erased`, or an
    /// event whose values are gone. Erased values are nil or `PersonalData.erasedMarker`.
    public var erased = false

    /// The state of a user with no events yet.
    public init(user: String) { self.user = user }

    /// Whether a cooling window (SPEC 2.5) is open at `t`, i.e. `t` is before ``UserState/coolingUntil``.
    public func isCooling(at t: Timestamp) -> Bool {
        if let until = coolingUntil { return t < until }
        return false
    }

    /// How many of the user's devices are active (what `maxDevices` limits).
    public var activeDeviceCount: Int { devices.values.reduce(0) { $0 + ($1.status == .active ? 1 : 0) } }

    /// The OTP that may still be verified or failed at `t`, or the refusal that says why not.
    public func usableOTP(_ otpId: String, at t: Timestamp) throws(LedgerError) -> OTPRecord {
        guard let otp = otps[otpId], otpId == latestOtpId, !otp.verified else {
            throw LedgerError(.otpNotFound, "no pending OTP \(otpId)", field: "otpId")
        }
        if t >= otp.expiresAt { throw LedgerError(.otpExpired, "OTP \(otpId) expired at \(otp.expiresAt)", until: otp.expiresAt) }
        if otp.failures >= otp.maxAttempts { throw LedgerError(.otpLocked, "OTP \(otpId) is locked after \(otp.failures) failed attempts", remainingAttempts: 0) }
        return otp
    }

    private func coolingCheck(_ at: Timestamp) throws(LedgerError) {
        if isCooling(at: at), let until = coolingUntil {
            throw LedgerError(.coolingPeriodActive, "a cooling period is active until \(until)", until: until)
        }
    }

    private func activeDeviceIndex(_ id: String) throws(LedgerError) -> Dictionary<String, DeviceRecord>.Index {
        guard let i = devices.index(forKey: id) else { throw LedgerError(.deviceNotFound, "no device \(id)", field: "deviceId") }
        switch devices.values[i].status {
        case .pending: throw LedgerError(.deviceNotFound, "no device \(id)", field: "deviceId")
        case .revoked: throw LedgerError(.deviceRevoked, "device \(id) is revoked", field: "deviceId")
        case .active: return i
        }
    }

    /// Faults of the event on its own, or against ids the stream already holds, that are
    /// `invalid_event` (checked before `time_regression`, SPEC 2.9).
    private func checkStatic(_ event: Event) throws(LedgerError) {
        let data = event.data
        switch event.type {
        case .challengeIssued, .otpIssued:
            guard data.time(.expiresAt)! > event.at else { throw .invalid("expiresAt must be after at", field: "data.expiresAt") }
        case .otpVerified:
            let gid = data.string(.grantId)!
            guard grants[gid] == nil else { throw .invalid("grant \(gid) exists", field: "data.grantId") }
            guard data.time(.grantExpiresAt)! > event.at else { throw .invalid("grantExpiresAt must be after at", field: "data.grantExpiresAt") }
        default:
            break
        }
    }

    /// Checks `event` against the rules at its own `at`, under `policy`, and folds it in.
    /// Throws the refusal (by SPEC 2.9 precedence) and leaves the state unchanged.
    public mutating func evolve(_ event: Event, policy: Policy) throws(LedgerError) {
        guard event.user == user else { throw .invalid("event for \(event.user ?? systemStream) applied to \(user)") }
        let at = event.at
        // SPEC 2.9: invalid_event wins over every other code, time_regression included.
        try checkStatic(event)
        if let lastAt, at < lastAt {
            throw LedgerError(.timeRegression, "at \(at) is before the stream's last event at \(lastAt)", field: "at")
        }
        let data = event.data
        switch event.type {
        case .policySet:
            throw .invalid("policy.set has no user")

        case .verificationRequested:
            let id = data.string(.deviceId)!
            if let name = data.string(.name) { try EventDecoder.checkName(name) }
            if let d = devices[id] {
                if d.status == .active { throw LedgerError(.deviceExists, "device \(id) is already registered", field: "deviceId") }
                if d.status == .revoked { throw LedgerError(.deviceRevoked, "device \(id) is revoked", field: "deviceId") }
            }
            var d = devices[id] ?? DeviceRecord(deviceId: id, status: .pending)
            d.requestedAt = at
            if let v = data.string(.name) { d.name = v } else if event.personal?.entry("/data/name") != nil { d.name = nil }
            if let v = data.string(.kind) { d.kind = v }
            if let v = data.string(.platform) { d.platform = v }
            devices[id] = d

        case .registered:
            let id = data.string(.deviceId)!
            let via = data.string(.via)!
            // An erased name was judged when it was appended.
            if let name = data.string(.name) { try EventDecoder.checkName(name) }
            let existing = devices[id]
            if existing?.status == .active { throw LedgerError(.deviceExists, "device \(id) is already registered", field: "deviceId") }
            if existing?.status == .revoked { throw LedgerError(.deviceRevoked, "device \(id) is revoked", field: "deviceId") }
            var usedGrant: String?, usedChallenge: String?
            switch via {
            case "initial":
                if everRegistered { throw LedgerError(.verificationRequired, "user \(user) already had a device: a new one needs proof", field: "via") }
            case "email_link":
                if existing?.status != .pending { throw LedgerError(.verificationRequired, "device \(id) has no pending verification", field: "via") }
            case "otp":
                let gid = data.string(.grantId)!
                guard let g = grants[gid], g.usedBy == nil, at < g.expiresAt else {
                    throw LedgerError(.grantInvalid, "grant \(gid) is unknown, used or expired", field: "grantId")
                }
                usedGrant = gid
            case "trusted_device":
                let cid = data.string(.challengeId)!
                guard let c = challenges[cid], c.resolution == .approved, c.action == "login",
                      c.requestingDeviceId == id, c.usedBy == nil, let approvedAt = c.resolvedAt,
                      at < approvedAt.adding(seconds: policy.grantTtlSeconds) else {
                    throw LedgerError(.verificationRequired, "challenge \(cid) is not an unused approved login for \(id) within \(policy.grantTtlSeconds) s", field: "challengeId")
                }
                usedChallenge = cid
            default: // admin
                break
            }
            if via != "initial" { try coolingCheck(at) }
            if Int64(activeDeviceCount) >= policy.maxDevices {
                throw LedgerError(.deviceLimitReached, "user \(user) has the maximum of \(policy.maxDevices) active devices")
            }
            var d = existing ?? DeviceRecord(deviceId: id, status: .active)
            d.status = .active
            d.name = data.string(.name)
            d.kind = data.string(.kind)
            d.platform = data.string(.platform) ?? d.platform
            d.appId = data.string(.appId)
            d.pushToken = data.string(.pushToken) ?? erasedMarker(event, "/data/pushToken")
            d.binding = data.string(.binding)
            d.via = via
            d.registeredAt = at
            d.lastAccessAt = at
            devices[id] = d
            everRegistered = true
            if let g = usedGrant { grants[g]?.usedBy = id }
            if let c = usedChallenge { challenges[c]?.usedBy = id }
            if via != "initial" { coolingUntil = at.adding(seconds: policy.coolingSeconds) }

        case .renamed:
            let id = data.string(.deviceId)!
            let name = data.string(.name)
            if let name { try EventDecoder.checkName(name) }
            guard let d = devices[id], d.status == .active else { throw LedgerError(.deviceNotFound, "no active device \(id)", field: "deviceId") }
            if let name, EventDecoder.trimName(name) == EventDecoder.trimName(d.name ?? "") {
                throw LedgerError(.nameUnchanged, "device \(id) already has that name", field: "name")
            }
            try coolingCheck(at)
            devices[id]!.name = name
            coolingUntil = at.adding(seconds: policy.coolingSeconds)

        case .accessed:
            // The most frequent event: one hash lookup, no copy of the record.
            let i = try activeDeviceIndex(data.string(.deviceId)!)
            devices.values[i].lastAccessAt = at

        case .pushTokenUpdated:
            let i = try activeDeviceIndex(data.string(.deviceId)!)
            devices.values[i].pushToken = data.string(.pushToken) ?? erasedMarker(event, "/data/pushToken")

        case .revoked:
            let id = data.string(.deviceId)!
            guard let d = devices[id] else { throw LedgerError(.deviceNotFound, "no device \(id)", field: "deviceId") }
            if d.status == .revoked { throw LedgerError(.deviceRevoked, "device \(id) is already revoked", field: "deviceId") }
            if policy.protectCurrentDevice && event.actor == "device:\(id)" {
                throw LedgerError(.currentDeviceProtected, "device \(id) may not revoke itself", field: "deviceId")
            }
            try coolingCheck(at)
            devices[id]!.status = .revoked
            devices[id]!.revokedAt = at
            coolingUntil = at.adding(seconds: policy.coolingSeconds)

        case .allRevoked:
            try coolingCheck(at)
            for (id, d) in devices where d.status != .revoked {
                devices[id]!.status = .revoked
                devices[id]!.revokedAt = at
            }
            coolingUntil = at.adding(seconds: policy.coolingSeconds)

        case .challengeIssued:
            let cid = data.string(.challengeId)!
            let expiresAt = data.time(.expiresAt)!
            if challenges[cid] != nil { throw LedgerError(.challengeExists, "challenge \(cid) exists", field: "challengeId") }
            let requester = data.string(.requestingDeviceId)!
            challenges[cid] = ChallengeRecord(
                challengeId: cid, action: data.string(.action)!, requestingDeviceId: requester,
                issuedAt: at, expiresAt: expiresAt, context: UserState.context(event),
                requesterWasActive: devices[requester]?.status == .active)

        case .challengeApproved, .challengeDenied:
            let cid = data.string(.challengeId)!
            let approver = data.string(.approverDeviceId)!
            guard let c = challenges[cid] else { throw LedgerError(.challengeNotFound, "no challenge \(cid)", field: "challengeId") }
            // SPEC 2.6: expired — by time, with or without its `challenge.expired` — is
            // `challenge_expired`; `challenge_resolved` is for approved and denied ones.
            if c.outcome(at: at) == .expired {
                throw LedgerError(.challengeExpired, "challenge \(cid) expired at \(c.expiresAt)", until: c.expiresAt, field: "challengeId")
            }
            if c.resolution != .pending { throw LedgerError(.challengeResolved, "challenge \(cid) is already \(c.resolution.name)", field: "challengeId") }
            let approverActive = devices[approver]?.status == .active
            let selfApproval = approver == c.requestingDeviceId
            let trusted = selfApproval
                ? (event.type == .challengeApproved && c.requesterWasActive && approverActive)
                : approverActive
            guard trusted else {
                throw LedgerError(.approverNotTrusted, "device \(approver) may not resolve challenge \(cid)", field: "deviceId")
            }
            var r = c
            r.resolution = event.type == .challengeApproved ? .approved : .denied
            r.resolvedAt = at
            r.approverDeviceId = approver
            r.userVerified = data.bool(.userVerified)
            challenges[cid] = r

        case .challengeExpired:
            let cid = data.string(.challengeId)!
            guard let c = challenges[cid] else { throw LedgerError(.challengeNotFound, "no challenge \(cid)", field: "challengeId") }
            if c.resolution != .pending { throw LedgerError(.challengeResolved, "challenge \(cid) is already \(c.resolution.name)", field: "challengeId") }
            if !ChallengeRecord.hasExpired(c.expiresAt, at: at) { throw LedgerError(.challengeNotExpired, "challenge \(cid) expires at \(c.expiresAt)", until: c.expiresAt, field: "challengeId") }
            challenges[cid]!.resolution = .expired
            challenges[cid]!.resolvedAt = at

        case .otpIssued:
            let oid = data.string(.otpId)!
            let expiresAt = data.time(.expiresAt)!
            if otps[oid] != nil { throw LedgerError(.otpExists, "OTP \(oid) exists", field: "otpId") }
            let windowStart = at.adding(seconds: -3600)
            let recent = otpIssueTimes.filter { $0 > windowStart }
            if Int64(recent.count) >= policy.otpPerHour {
                // The limit lifts once all but `otpPerHour - 1` of the hour's issues are an
                // hour old — not the first of them, when `otpPerHour` was lowered since.
                let until = recent[recent.count - Int(policy.otpPerHour)].adding(seconds: 3600)
                throw LedgerError(.otpRateLimited, "at most \(policy.otpPerHour) OTPs per hour", until: until)
            }
            otps[oid] = OTPRecord(otpId: oid, channel: data.string(.channel)!, target: data.string(.target) ?? PersonalData.erasedMarker,
                                  codeHash: data.string(.codeHash)!, issuedAt: at, expiresAt: expiresAt,
                                  maxAttempts: data.int(.maxAttempts)!)
            latestOtpId = oid
            otpIssueTimes = recent + [at]

        case .otpFailed:
            let oid = data.string(.otpId)!
            _ = try usableOTP(oid, at: at)
            otps[oid]!.failures += 1

        case .otpVerified:
            let oid = data.string(.otpId)!
            _ = try usableOTP(oid, at: at)
            let gid = data.string(.grantId)!
            let grantExpiresAt = data.time(.grantExpiresAt)!
            otps[oid]!.verified = true
            grants[gid] = GrantRecord(grantId: gid, otpId: oid, expiresAt: grantExpiresAt)

        case .userErased:
            // The values of every earlier event are destroyed: the state keeps no copy either.
            for id in devices.keys {
                devices[id]!.name = nil
                if devices[id]!.pushToken != nil { devices[id]!.pushToken = PersonalData.erasedMarker }
            }
            // (Settled challenges and older OTPs live in their indexes: the append scrubs those.)
            for (id, c) in challenges { challenges[id] = PersonalData.scrubbed(c) }
            for (id, o) in otps { otps[id] = PersonalData.scrubbed(o) }
            erased = true
        }
        if event.personal?.hasErased == true { erased = true }
        version += 1
        lastAt = at
    }

    private func erasedMarker(_ event: Event, _ pointer: String) -> String? {
        event.personal?.entry(pointer) != nil ? PersonalData.erasedMarker : nil
    }

    /// A challenge's context, with a marker for each erased value (the keys stay).
    static func context(_ event: Event) -> StringMap? {
        var ctx = event.data.map(.context)
        for entry in event.personal?.entries ?? [] where entry.salt == nil && entry.pointer.hasPrefix(PersonalData.contextPrefix) {
            let key = PersonalData.unescape(String(entry.pointer.dropFirst(PersonalData.contextPrefix.count)))
            ctx = ctx ?? StringMap()
            ctx!.pairs.append((key, PersonalData.erasedMarker))
        }
        return ctx
    }
}
