import AuthLedgerCore
extension Ledger {
    /// Decides `command` against the state read inside the write transaction, at the
    /// time `clock()` gives inside it (so racing writers never move a stream's `at`
    /// backwards), validates the events with `evolve`, and appends them durably.
    /// A refusal appends nothing and is thrown — except that `otp_invalid` keeps its
    /// `otp.failed` (committed, then thrown in ``/AuthLedgerCore/LedgerError/appended``).
    public func execute(_ command: Command, meta: StringMap? = nil, clock: () -> Timestamp = Timestamp.now) throws -> CommandResult {
        try validate(command)
        let result = try storage.write { w in
            let session = try AppendSession(w)
            let result = try execute(command, meta: meta, now: clock(), in: session)
            try session.finish()
            return result
        }
        if let last = result.events.last { notifyCommit(Head(seq: last.seq, hash: last.hash)) }
        return try Ledger.throwingRefusal(result)
    }

    /// `result`, or its refusal thrown with the events it appended.
    static func throwingRefusal(_ result: CommandResult) throws -> CommandResult {
        guard var refusal = result.refusal else { return result }
        refusal.appended = result.events
        throw refusal
    }

    func execute(_ command: Command, meta: StringMap?, now: Timestamp, in session: AppendSession) throws -> CommandResult {
        let state = try command.user.map { try session.userState($0) } ?? UserState(user: systemStream)
        let policy = try session.systemState().policy
        var decision = try Decider.decide(command, state: state, policy: policy, now: now, meta: meta, secrets: { try self.secrets() })
        // The same field checks as import: a command must not append what import would refuse.
        for e in decision.events { _ = try EventDecoder.decodeData(e.data.json, type: e.type) }
        var checked = Set<String>()
        for e in decision.events {
            try Ledger.checkAsFixture(e)
            if let r = try session.append(EventInput(event: e), checked: &checked) { decision.result.events.append(r) }
        }
        return decision.result
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
        case let .requestVerification(_, d, _, kind, _):
            try check(.verificationRequested, [(.deviceId, d), (.kind, kind)])
        case let .register(r):
            try check(.registered, [(.deviceId, r.deviceId), (.kind, r.kind), (.binding, r.binding), (.via, r.via),
                                    (.grantId, r.grantId), (.challengeId, r.challengeId)])
            try EventDecoder.checkPairing(via: r.via, grant: r.grantId != nil, challenge: r.challengeId != nil, prefix: "")
        case let .rename(_, d, _): try check(.renamed, [(.deviceId, d)])
        case let .revoke(_, d, _): try check(.revoked, [(.deviceId, d)])
        case let .access(_, d): try check(.accessed, [(.deviceId, d)])
        case let .updatePushToken(_, d, _): try check(.pushTokenUpdated, [(.deviceId, d)])
        case let .issueChallenge(_, d, action, _):
            try check(.challengeIssued, [(.requestingDeviceId, d), (.action, action)])
        case let .approve(_, c, d, _): try check(.challengeApproved, [(.challengeId, c), (.deviceId, d)])
        case let .deny(_, c, d): try check(.challengeDenied, [(.challengeId, c), (.deviceId, d)])
        case let .expireChallenge(_, c): try check(.challengeExpired, [(.challengeId, c)])
        case let .verifyOTP(_, o, _): try check(.otpVerified, [(.otpId, o)])
        case .revokeAll, .sendOTP, .setPolicy: break
        }
    }

    /// Appends `challenge.expired` (actor `system`) for every unresolved challenge past
    /// `expiresAt` at `now`. Returns the events appended.
    @discardableResult
    public func expireDueChallenges(now: Timestamp) throws -> [RecordedEvent] {
        var due: [(String, String)] = []
        try storage.read { r in
            try r.scanProjectionStates { key, bytes in
                guard key != systemStream, let s = try? StateCodec.decode(bytes, user: key) else { return true }
                for c in s.challenges.values where c.isOverdue(at: now) {
                    due.append((key, c.challengeId))
                }
                return true
            }
        }
        guard !due.isEmpty else { return [] }
        let meta = StringMap([("actor", "system")])
        let appended = try storage.write { w in
            let session = try AppendSession(w)
            var out: [RecordedEvent] = []
            for (user, cid) in due {
                var data = EventData()
                data[.challengeId] = .string(cid)
                guard let state = try? session.userState(user) else { continue }
                let at = max(now, state.lastAt ?? now)
                let request = AppendRequest([EventInput(event: Event(type: .challengeExpired, user: user, at: at, data: data, meta: meta))])
                // Another writer may have resolved it meanwhile: skip refusals, keep the rest.
                if let r = try? session.isolated({ try session.applyUnisolated(request) }) {
                    out += r.appended
                }
            }
            try session.finish()
            return out
        }
        if let last = appended.last { notifyCommit(Head(seq: last.seq, hash: last.hash)) }
        return appended
    }
}
