import AuthLedgerCore
extension Ledger {
    /// `result`, or its refusal thrown with the events it appended.
    static func throwingRefusal(_ result: CommandResult) throws -> CommandResult {
        guard var refusal = result.refusal else { return result }
        refusal.appended = result.events
        throw refusal
    }

    func execute(_ command: Command, meta: StringMap?, now: Timestamp, draws: DecisionDraws = DecisionDraws(),
                 in session: AppendSession) throws -> CommandResult {
        let state = try command.user.map { try session.userState($0) } ?? UserState(user: systemStream)
        let policy = try session.systemState().policy
        var decision = try Decider.decide(command, state: state, policy: policy, now: now, meta: meta,
                                          secrets: { try self.secrets() }, draws: draws)
        guard now.isWithinEventRange else {
            throw LedgerError.invalid("\"at\" must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z", field: "at")
        }
        var checked = Set<String>()
        for e in decision.events {
            if let r = try session.append(EventInput(event: e), checked: &checked) { decision.result.events.append(r) }
        }
        return decision.result
    }

    /// The `(kind, user, id)` records the events `command` decides will name — those of its
    /// arguments and those of the id and link token drawn for it — loaded with its group.
    func recordsNamed(by command: Command, draws: DecisionDraws) -> [(kind: RecordKind, user: String, id: String)] {
        guard let user = command.user else { return [] }
        let named: [(RecordKind, String)]
        switch command {
        case .issueChallenge: named = [(.challenge, draws.id)]
        case .sendOTP: named = [(.otp, draws.id)]
        case let .verifyOTP(c): named = [(.otp, c.otpId), (.grant, draws.id)]
        case let .approve(c): named = [(.challenge, c.challengeId)]
        case let .deny(c): named = [(.challenge, c.challengeId)]
        case let .expireChallenge(c): named = [(.challenge, c.challengeId)]
        case let .register(r):
            named = [r.via?.grantId.map { (.grant, $0) }, r.via?.challengeId.map { (.challenge, $0) }].compactMap { $0 }
        case .requestVerification:
            // (Without the key, the decision fails the same way: nothing to load.)
            named = (try? secrets()).map { [(.link, LinkToken.hash(draws.linkToken, secrets: $0))] } ?? []
        default: named = []
        }
        return named.map { (kind: $0.0, user: user, id: $0.1) }
    }

    /// The checks of a command, once, before the store is touched: each argument gets the
    /// fixture decoder's own check of the event field it becomes, under the command's name
    /// for it, and `meta` the decoder's check of an event's `meta` — so a command never
    /// appends what `import` would refuse (SPEC 1.1, 1.3: every export re-imports), and its
    /// decided events are not checked again. (Names are judged by the rules, as on import;
    /// an OTP's target is masked by the decision, which refuses what it cannot mask; the
    /// decision's own values — ids, nonces, hashes, times — are well formed by construction.)
    func validate(_ command: Command, meta: StringMap?) throws {
        if let user = command.user { try EventDecoder.checkUser(user) }
        try EventDecoder.checkCommandMeta(meta)
        func check(_ type: EventType, _ fields: [(Field, String?)]) throws {
            for (field, value) in fields { try EventDecoder.checkCommandValue(value, field, of: type, path: field.name) }
        }
        func key(_ type: EventType, _ key: StringMap?) throws {
            try EventDecoder.checkCommandMap(key, .publicKey, of: type, path: Field.publicKey.name)
        }
        switch command {
        case let .requestVerification(c): try check(.verificationRequested, [(.deviceId, c.deviceId), (.platform, c.platform)])
        case let .register(r):
            try check(.registered, [(.deviceId, r.deviceId), (.grantId, r.via?.grantId), (.challengeId, r.via?.challengeId),
                                    (.platform, r.platform), (.appId, r.appId), (.pushToken, r.pushToken)])
            try key(.registered, r.publicKey)
        case let .rename(c): try check(.renamed, [(.deviceId, c.deviceId)])
        case let .revoke(c): try check(.revoked, [(.deviceId, c.deviceId), (.reason, c.reason)])
        case let .revokeAll(c): try check(.allRevoked, [(.reason, c.reason)])
        case let .access(c): try check(.accessed, [(.deviceId, c.deviceId)])
        case let .updatePushToken(c): try check(.pushTokenUpdated, [(.deviceId, c.deviceId), (.pushToken, c.pushToken)])
        case let .issueChallenge(c):
            try check(.challengeIssued, [(.requestingDeviceId, c.requestingDeviceId), (.action, c.action)])
            try EventDecoder.checkCommandMap(c.context, .context, of: .challengeIssued, path: Field.context.name)
        case let .approve(c):
            try check(.challengeApproved, [(.challengeId, c.challengeId), (.deviceId, c.deviceId), (.signature, c.signature)])
        case let .deny(c): try check(.challengeDenied, [(.challengeId, c.challengeId), (.deviceId, c.deviceId), (.signature, c.signature)])
        case let .expireChallenge(c): try check(.challengeExpired, [(.challengeId, c.challengeId)])
        case let .verifyOTP(c): try check(.otpVerified, [(.otpId, c.otpId)])
        case let .rotateKey(c):
            try check(.keyRotated, [(.deviceId, c.deviceId), (.signature, c.signature)])
            try key(.keyRotated, c.publicKey)
        case let .setPolicy(p):
            for (field, value) in [(Field.coolingSeconds, p.coolingSeconds), (.challengeTtlSeconds, p.challengeTtlSeconds),
                                   (.otpTtlSeconds, p.otpTtlSeconds), (.otpMaxAttempts, p.otpMaxAttempts), (.otpPerHour, p.otpPerHour),
                                   (.grantTtlSeconds, p.grantTtlSeconds), (.maxDevices, p.maxDevices),
                                   (.verificationLinkTtlSeconds, p.verificationLinkTtlSeconds)] {
                try EventDecoder.checkCommandValue(value, field, of: .policySet)
            }
        case let .redeemLink(c):
            try check(.registered, [(.platform, c.platform), (.pushToken, c.pushToken)])
            try key(.registered, c.publicKey)
        case .sendOTP: break
        }
    }

    /// Appends `challenge.expired` (actor `system`) for every unresolved challenge past
    /// `expiresAt` at `now`. Returns the events appended. The due challenges are found and
    /// expired alone on the writer's task while the calling task is suspended (found with an
    /// async read, expired in one group whose users and challenges are loaded first
    /// (`writeGroup`): on PostgreSQL no thread waits).
    @discardableResult
    public func expireDueChallenges(now: Timestamp) async throws -> [RecordedEvent] {
        try await writer.exclusiveAsync { [self] in
            var all = ReadLoad()
            all.allStates = true
            let due = try await read(all) { r in try Ledger.dueChallenges(r, now: now) }
            guard !due.isEmpty else { return [] }
            do {
                return expired(try await storage.writeGroup(start: { _, _ in }, load: {
                    var load = StorageLoad()
                    load.appends = true
                    load.states = [systemStream] + due.map(\.user)
                    load.records = due.map { (.challenge, $0.user, $0.challenge) }
                    return load
                }) { w in try Ledger.expire(due, now: now, w) })
            } catch let e as GroupStatementRefused { throw e.error }
        }
    }

    /// The unresolved challenges past `expiresAt` at `now`: (user, challenge id).
    private static func dueChallenges(_ r: any StorageReader, now: Timestamp) throws -> [Due] {
        var due: [Due] = []
        try r.scanProjectionStates { key, bytes in
            guard key != systemStream, let s = try? StateCodec.decode(bytes, user: key) else { return true }
            for c in s.challenges.values where c.isOverdue(at: now) {
                due.append(Due(user: key, challenge: c.challengeId))
            }
            return true
        }
        return due
    }

    private struct Due: Sendable {
        let user: String
        let challenge: String
    }

    /// Appends `challenge.expired` for each of `due` that is still unresolved.
    private static func expire(_ due: [Due], now: Timestamp, _ w: any StorageWriter) throws -> [RecordedEvent] {
        let meta = StringMap([("actor", "system")])
        let session = try AppendSession(w)
        var out: [RecordedEvent] = []
        for d in due {
            guard let state = try? session.userState(d.user) else { continue }
            let at = max(now, state.lastAt ?? now)
            let request = AppendRequest([EventInput(event: Event(user: d.user, at: at, payload: .challengeExpired(ChallengeExpired(challengeId: d.challenge)), meta: meta))])
            // Another writer may have resolved it meanwhile: skip refusals, keep the rest.
            if let r = try? session.isolated({ try session.applyUnisolated(request) }) {
                out += r.appended
            }
        }
        try session.finish()
        return out
    }

    /// Tells the subscribers of `appended`, and returns it.
    private func expired(_ appended: [RecordedEvent]) -> [RecordedEvent] {
        if let last = appended.last { notifyCommit(Head(seq: last.seq, hash: last.hash)) }
        return appended
    }
}
