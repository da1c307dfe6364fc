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
    /// Every `verificationId` the user's requests used (each is unique per user, SPEC 11).
    public var verificationIds: Set<String> = []
    /// The link hashes of the user's requests (SPEC 11) → their `verificationId`; the
    /// maintained state keeps the live ones (``UserState/isLiveLink(_:)``), the link index all.
    public var links: [String: String] = [:]

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
    private func checkStatic(_ payload: EventPayload, at: Timestamp) throws(LedgerError) {
        switch payload {
        case let .challengeIssued(p):
            guard p.expiresAt > at else { throw .invalid("expiresAt must be after at", field: "data.expiresAt") }
        case let .otpIssued(p):
            guard p.expiresAt > at else { throw .invalid("expiresAt must be after at", field: "data.expiresAt") }
        case let .verificationRequested(p):
            try checkVerificationRequest(p, at: at)
        case let .registered(p):
            if let jwk = p.publicKey { _ = try DeviceKey(jwk: jwk, path: "data.publicKey") }
        case let .keyRotated(p):
            _ = try DeviceKey(jwk: p.publicKey, path: "data.publicKey")
        case let .otpVerified(p):
            guard grants[p.grantId] == nil else { throw .invalid("grant \(p.grantId) exists", field: "data.grantId") }
            guard p.grantExpiresAt > at else { throw .invalid("grantExpiresAt must be after at", field: "data.grantExpiresAt") }
        default:
            break
        }
    }

    /// Checks `event` against the rules at its own `at`, under `policy`, and folds it in.
    /// Throws the refusal (by SPEC 2.9 precedence) and leaves the state unchanged.
    public mutating func evolve(_ event: Event, policy: Policy) throws(LedgerError) {
        guard event.user == user else { throw .invalid("event for \(event.user ?? systemStream) applied to \(user)") }
        let payload = try event.payload
        let at = event.at
        // SPEC 2.9: invalid_event wins over every other code, time_regression included.
        try checkStatic(payload, at: at)
        if let lastAt, at < lastAt {
            throw LedgerError(.timeRegression, "at \(at) is before the stream's last event at \(lastAt)", field: "at")
        }
        switch payload {
        case .policySet:
            throw .invalid("policy.set has no user")

        case let .verificationRequested(p):
            let id = p.deviceId
            if let name = p.name { try EventDecoder.checkName(name) }
            if let d = devices[id] {
                if d.status == .active { throw LedgerError(.deviceExists, "device \(id) is already registered", field: "deviceId") }
                if d.status == .revoked { throw LedgerError(.deviceRevoked, "device \(id) is revoked", field: "deviceId") }
            }
            var d = devices[id] ?? DeviceRecord(deviceId: id, status: .pending)
            d.requestedAt = at
            if let v = p.name { d.name = v } else if event.personal?.entry("/data/name") != nil { d.name = nil }
            if let v = p.kind { d.kind = v.rawValue }
            if let v = p.platform { d.platform = v }
            recordRequest(p, into: &d)
            devices[id] = d

        case let .registered(p):
            let id = p.deviceId
            // An erased name was judged when it was appended.
            if let name = p.name { try EventDecoder.checkName(name) }
            let existing = devices[id]
            if existing?.status == .active { throw LedgerError(.deviceExists, "device \(id) is already registered", field: "deviceId") }
            if existing?.status == .revoked { throw LedgerError(.deviceRevoked, "device \(id) is revoked", field: "deviceId") }
            switch p.via {
            case .initial:
                if everRegistered { throw LedgerError(.verificationRequired, "user \(user) already had a device: a new one needs proof", field: "via") }
            case .emailLink:
                if existing?.status != .pending { throw LedgerError(.verificationRequired, "device \(id) has no pending verification", field: "via") }
                try checkLinkProof(p, existing!, at: at)
            case let .otp(gid):
                guard let g = grants[gid], g.usedBy == nil, at < g.expiresAt else {
                    throw LedgerError(.grantInvalid, "grant \(gid) is unknown, used or expired", field: "grantId")
                }
            case let .trustedDevice(cid):
                guard let c = challenges[cid], c.resolution == .approved, c.action == "login",
                      c.requestingDeviceId == id, c.usedBy == nil, let approvedAt = c.resolvedAt,
                      at < approvedAt.adding(seconds: policy.grantTtlSeconds) else {
                    throw LedgerError(.verificationRequired, "challenge \(cid) is not an unused approved login for \(id) within \(policy.grantTtlSeconds) s", field: "challengeId")
                }
            case .admin:
                break
            }
            if p.via != .initial { try coolingCheck(at) }
            if Int64(activeDeviceCount) >= policy.maxDevices {
                throw LedgerError(.deviceLimitReached, "user \(user) has the maximum of \(policy.maxDevices) active devices")
            }
            var d = existing ?? DeviceRecord(deviceId: id, status: .active)
            d.status = .active
            d.name = p.name
            d.kind = p.kind.rawValue
            d.platform = p.platform ?? d.platform
            d.appId = p.appId
            d.pushToken = p.pushToken ?? erasedMarker(event, "/data/pushToken")
            d.binding = p.binding.rawValue
            d.via = p.via.name
            d.registeredAt = at
            d.lastAccessAt = at
            d.publicKey = try p.publicKey.map { k throws(LedgerError) in try DeviceKey(jwk: k, path: "data.publicKey") }
            d.verificationId = nil
            d.linkHash = nil
            d.linkExpiresAt = nil
            devices[id] = d
            everRegistered = true
            if let g = p.via.grantId { grants[g]?.usedBy = id }
            if let c = p.via.challengeId { challenges[c]?.usedBy = id }
            if p.via != .initial { coolingUntil = at.adding(seconds: policy.coolingSeconds) }

        case let .renamed(p):
            let id = p.deviceId
            if let name = p.name { try EventDecoder.checkName(name) }
            guard let d = devices[id], d.status == .active else { throw LedgerError(.deviceNotFound, "no active device \(id)", field: "deviceId") }
            if let name = p.name, EventDecoder.trimName(name) == EventDecoder.trimName(d.name ?? "") {
                throw LedgerError(.nameUnchanged, "device \(id) already has that name", field: "name")
            }
            try coolingCheck(at)
            devices[id]!.name = p.name
            coolingUntil = at.adding(seconds: policy.coolingSeconds)

        case let .accessed(p):
            // The most frequent event: one hash lookup, no copy of the record.
            let i = try activeDeviceIndex(p.deviceId)
            devices.values[i].lastAccessAt = at

        case let .pushTokenUpdated(p):
            let i = try activeDeviceIndex(p.deviceId)
            devices.values[i].pushToken = p.pushToken ?? erasedMarker(event, "/data/pushToken")

        case let .revoked(p):
            let id = p.deviceId
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

        case let .challengeIssued(p):
            let cid = p.challengeId
            if challenges[cid] != nil { throw LedgerError(.challengeExists, "challenge \(cid) exists", field: "challengeId") }
            challenges[cid] = ChallengeRecord(
                challengeId: cid, action: p.action, requestingDeviceId: p.requestingDeviceId,
                issuedAt: at, expiresAt: p.expiresAt, context: UserState.context(p.context, event.personal),
                requesterWasActive: devices[p.requestingDeviceId]?.status == .active, nonce: p.nonce)

        case let .challengeApproved(p):
            try resolve(p.challengeId, by: p.approverDeviceId, as: .approved, userVerified: p.userVerified, signature: p.signature,
                        policy: policy, at: at)

        case let .challengeDenied(p):
            try resolve(p.challengeId, by: p.approverDeviceId, as: .denied, userVerified: nil, signature: p.signature,
                        policy: policy, at: at)

        case let .keyRotated(p):
            let i = try activeDeviceIndex(p.deviceId)
            devices.values[i].publicKey = try rotatedKey(p, current: devices.values[i].publicKey)

        case let .challengeExpired(p):
            let cid = p.challengeId
            guard let c = challenges[cid] else { throw LedgerError(.challengeNotFound, "no challenge \(cid)", field: "challengeId") }
            if c.resolution != .pending { throw LedgerError(.challengeResolved, "challenge \(cid) is already \(c.resolution.name)", field: "challengeId") }
            if !ChallengeRecord.hasExpired(c.expiresAt, at: at) { throw LedgerError(.challengeNotExpired, "challenge \(cid) expires at \(c.expiresAt)", until: c.expiresAt, field: "challengeId") }
            challenges[cid]!.resolution = .expired
            challenges[cid]!.resolvedAt = at

        case let .otpIssued(p):
            let oid = p.otpId
            if otps[oid] != nil { throw LedgerError(.otpExists, "OTP \(oid) exists", field: "otpId") }
            let windowStart = at.adding(seconds: -3600)
            let recent = otpIssueTimes.filter { $0 > windowStart }
            if Int64(recent.count) >= policy.otpPerHour {
                // The limit lifts once all but `otpPerHour - 1` of the hour's issues are an
                // hour old — not the first of them, when `otpPerHour` was lowered since.
                let until = recent[recent.count - Int(policy.otpPerHour)].adding(seconds: 3600)
                throw LedgerError(.otpRateLimited, "at most \(policy.otpPerHour) OTPs per hour", until: until)
            }
            otps[oid] = OTPRecord(otpId: oid, channel: p.channel.rawValue, target: p.target ?? PersonalData.erasedMarker,
                                  codeHash: p.codeHash, issuedAt: at, expiresAt: p.expiresAt, maxAttempts: p.maxAttempts)
            latestOtpId = oid
            otpIssueTimes = recent + [at]

        case let .otpFailed(p):
            _ = try usableOTP(p.otpId, at: at)
            otps[p.otpId]!.failures += 1

        case let .otpVerified(p):
            _ = try usableOTP(p.otpId, at: at)
            otps[p.otpId]!.verified = true
            grants[p.grantId] = GrantRecord(grantId: p.grantId, otpId: p.otpId, expiresAt: p.grantExpiresAt)

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

    /// SPEC 2.6: an approval or denial of challenge `cid` by device `approver`.
    private mutating func resolve(_ cid: String, by approver: String, as resolution: ChallengeOutcome, userVerified: Bool?,
                                  signature: String?, policy: Policy, at: Timestamp) throws(LedgerError) {
        guard let c = challenges[cid] else { throw LedgerError(.challengeNotFound, "no challenge \(cid)", field: "challengeId") }
        // Expired — by time, with or without its `challenge.expired` — is `challenge_expired`;
        // `challenge_resolved` is for approved and denied ones.
        if c.outcome(at: at) == .expired {
            throw LedgerError(.challengeExpired, "challenge \(cid) expired at \(c.expiresAt)", until: c.expiresAt, field: "challengeId")
        }
        if c.resolution != .pending { throw LedgerError(.challengeResolved, "challenge \(cid) is already \(c.resolution.name)", field: "challengeId") }
        let approverActive = devices[approver]?.status == .active
        let selfApproval = approver == c.requestingDeviceId
        let trusted = selfApproval ? (resolution == .approved && c.requesterWasActive && approverActive) : approverActive
        guard trusted else {
            throw LedgerError(.approverNotTrusted, "device \(approver) may not resolve challenge \(cid)", field: "deviceId")
        }
        try checkAnswerProof(c, by: approver, decision: resolution == .approved ? "approve" : "deny", userVerified: userVerified,
                             signature: signature, policy: policy)
        var r = c
        r.resolution = resolution
        r.resolvedAt = at
        r.approverDeviceId = approver
        r.userVerified = userVerified
        challenges[cid] = r
    }

    private func erasedMarker(_ event: Event, _ pointer: String) -> String? {
        event.personal?.entry(pointer) != nil ? PersonalData.erasedMarker : nil
    }

    /// A challenge's context, with a marker for each erased value (the keys stay).
    static func context(_ given: StringMap?, _ personal: PersonalValues?) -> StringMap? {
        var ctx = given
        for entry in personal?.entries ?? [] where entry.salt == nil && entry.pointer.hasPrefix(PersonalData.contextPrefix) {
            let key = PersonalData.unescape(String(entry.pointer.dropFirst(PersonalData.contextPrefix.count)))
            ctx = ctx ?? StringMap()
            ctx!.pairs.append((key, PersonalData.erasedMarker))
        }
        return ctx
    }
}
