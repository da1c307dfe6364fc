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
        var checked = Set<String>()
        for e in decision.events {
            try Ledger.checkAsFixture(e)
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

    /// The command side appends only events that `import` would accept (SPEC 1.1, 1.3):
    /// every field of a decided event passes the fixture decoder, so an export of any
    /// store re-imports (no control characters in `platform`, `appId`, `reason`,
    /// `context`; no empty `pushToken`; …).
    static func checkAsFixture(_ e: Event) throws(LedgerError) {
        var m: [(String, JSON)] = [("type", .string(e.type.name))]
        if let u = e.user { m.append(("user", .string(u))) }
        m += [("at", .string(e.at.formatted)), ("data", e.data.json)]
        if let meta = e.meta { m.append(("meta", meta.json)) }
        _ = try EventDecoder.decode(.object(m), allowRecorded: false)
    }

    /// Static checks of a command's arguments, before the store is touched: each is the
    /// fixture decoder's own check of the event field it becomes, under the command's name
    /// for it (so a command never appends what `import` would refuse).
    func validate(_ command: Command) throws {
        if let user = command.user { try EventDecoder.checkUser(user) }
        func check(_ type: EventType, _ fields: [(Field, String?)]) throws {
            for (field, value) in fields { try EventDecoder.checkCommandValue(value, field, of: type, path: field.name) }
        }
        switch command {
        case let .requestVerification(c): try check(.verificationRequested, [(.deviceId, c.deviceId)])
        case let .register(r):
            try check(.registered, [(.deviceId, r.deviceId), (.grantId, r.via?.grantId), (.challengeId, r.via?.challengeId)])
        case let .rename(c): try check(.renamed, [(.deviceId, c.deviceId)])
        case let .revoke(c): try check(.revoked, [(.deviceId, c.deviceId)])
        case let .access(c): try check(.accessed, [(.deviceId, c.deviceId)])
        case let .updatePushToken(c): try check(.pushTokenUpdated, [(.deviceId, c.deviceId)])
        case let .issueChallenge(c):
            try check(.challengeIssued, [(.requestingDeviceId, c.requestingDeviceId), (.action, c.action)])
        case let .approve(c): try check(.challengeApproved, [(.challengeId, c.challengeId), (.deviceId, c.deviceId)])
        case let .deny(c): try check(.challengeDenied, [(.challengeId, c.challengeId), (.deviceId, c.deviceId)])
        case let .expireChallenge(c): try check(.challengeExpired, [(.challengeId, c.challengeId)])
        case let .verifyOTP(c): try check(.otpVerified, [(.otpId, c.otpId)])
        case let .rotateKey(c): try check(.keyRotated, [(.deviceId, c.deviceId), (.signature, c.signature)])
        case .revokeAll, .sendOTP, .setPolicy, .redeemLink: break
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
            return expired(try await storage.writeGroup(start: { _, _ in }, load: {
                var load = StorageLoad()
                load.appends = true
                load.states = [systemStream] + due.map(\.user)
                load.records = due.map { (.challenge, $0.user, $0.challenge) }
                return load
            }) { w in try Ledger.expire(due, now: now, w) })
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
