import AuthLedgerCore

/// What a watch follows: one user's `devices`, `cooling` or `pending` answer, or one
/// challenge of a user (reference 3), with the view options of the plain query.
public struct WatchTarget: Hashable, Sendable, CustomStringConvertible {
    /// The four watchable projections.
    public enum Projection: String, Hashable, Sendable, CaseIterable {
        /// A user's devices and cooling window (reference 3.1).
        case devices
        /// A user's cooling window (reference 3.2).
        case cooling
        /// A user's pending challenges (reference 3.3).
        case pending
        /// One challenge of a user (reference 3.4).
        case challenge
    }

    /// Which answer.
    public var projection: Projection
    /// Whose.
    public var user: String
    /// The challenge's id (`challenge` only).
    public var challengeId: String?
    /// The device the caller names as its own (`devices`: `current: true`).
    public var current: String?
    /// List revoked devices too (`devices`).
    public var includeRevoked: Bool
    /// The requester's view of a challenge (status only).
    public var asRequester: Bool

    init(_ projection: Projection, _ user: String, challengeId: String? = nil, current: String? = nil,
         includeRevoked: Bool = false, asRequester: Bool = false) {
        self.projection = projection
        self.user = user
        self.challengeId = challengeId
        self.current = current
        self.includeRevoked = includeRevoked
        self.asRequester = asRequester
    }

    /// `user`'s devices answer.
    public static func devices(_ user: String, current: String? = nil, includeRevoked: Bool = false) -> WatchTarget {
        WatchTarget(.devices, user, current: current, includeRevoked: includeRevoked)
    }

    /// `user`'s cooling answer.
    public static func cooling(_ user: String) -> WatchTarget { WatchTarget(.cooling, user) }

    /// `user`'s pending approvals.
    public static func pending(_ user: String) -> WatchTarget { WatchTarget(.pending, user) }

    /// Challenge `id` of `user`, the requester's view with `asRequester`.
    public static func challenge(_ id: String, of user: String, asRequester: Bool = false) -> WatchTarget {
        WatchTarget(.challenge, user, challengeId: id, asRequester: asRequester)
    }

    /// The target of the query `projection` for `user` under the view flags of `o`
    /// (its position and as-of time are not the watch's: a watch follows the head, now).
    public init(_ projection: Projection, user: String, challengeId: String? = nil, options o: QueryOptions) {
        switch projection {
        case .devices: self = .devices(user, current: o.current, includeRevoked: o.includeRevoked)
        case .cooling: self = .cooling(user)
        case .pending: self = .pending(user)
        case .challenge: self = .challenge(challengeId ?? "", of: user, asRequester: o.asRequester)
        }
    }

    /// The query options of this target at `position` (nil: the head) and `asOf`.
    func options(position: UInt64?, asOf: Timestamp) -> QueryOptions {
        QueryOptions(position: position, asOf: asOf, current: current, includeRevoked: includeRevoked, asRequester: asRequester)
    }

    /// `devices:alice`, `challenge:alice:c1`.
    public var description: String {
        projection.rawValue + ":" + user + (challengeId.map { ":" + $0 } ?? "")
    }
}

/// One answer a watch delivers: the plain query's answer for its target.
public enum WatchAnswer: Sendable, Equatable {
    /// The `devices` answer.
    case devices(DeviceList)
    /// The `cooling` answer.
    case cooling(CoolingAnswer)
    /// The `pending` answer.
    case pending([PendingChallenge])
    /// The `challenge` answer.
    case challenge(ChallengeView)

    /// The answer's JSON document, exactly as the plain query (CLI, HTTP) answers it.
    public var json: JSON {
        switch self {
        case .devices(let a): a.json
        case .cooling(let a): a.json
        case .pending(let a): a.json
        case .challenge(let a): a.json
        }
    }

    /// The answer without the members that move with every commit and tick (`position`,
    /// `asOf`): two answers are the same when these are equal.
    var comparable: WatchAnswer {
        guard case .devices(var d) = self else { return self }
        d.position = 0
        d.asOf = .epoch
        return .devices(d)
    }

    /// Whether `self` and `other` are the same answer (position and as-of time aside).
    public func sameAnswer(as other: WatchAnswer) -> Bool { comparable == other.comparable }

    /// A digest of ``comparable`` (equal answers, equal digests; within one process).
    var digest: Int { comparable.json.serialized().hashValue }

    /// The challenge's status while its answer is a challenge.
    public var challengeStatus: String? {
        if case .challenge(let c) = self { return c.status }
        return nil
    }
}

/// One update of a watch: the answer at `position`, evaluated at `asOf`.
public struct WatchUpdate: Sendable {
    /// `snapshot`: the first answer of a watch; `changed`: a different answer than the
    /// last one delivered.
    public enum Kind: String, Sendable { case snapshot, changed }

    /// Which watched answer this is (a watch of several targets tells them apart).
    public var target: WatchTarget
    /// The log position the answer reflects.
    public var position: UInt64
    /// The time it was evaluated at.
    public var asOf: Timestamp
    /// The answer.
    public var answer: WatchAnswer
    /// Whether it is the watch's first answer for `target` or a change.
    public var kind: Kind
}

extension Ledger {
    /// The answers for `targets` in one read at the head, evaluated at `asOf`, each with
    /// the next time it changes by time alone (a cooling window's end, a pending
    /// challenge's expiry). Throws the query's own errors (`challenge_not_found`,
    /// `invalid_event`).
    func watchAnswers(_ targets: [WatchTarget], asOf: Timestamp)
        async throws -> (position: UInt64, answers: [(answer: WatchAnswer, deadline: Timestamp?)]) {
        try await read(Ledger.watchLoad(targets), then: { r in
            try Ledger.replayLoad(r, targets.map { (user: $0.user, position: UInt64?.none, asOf: asOf, fromScratch: false) })
        }) { r in
            let head = try r.head().seq
            return (head, try targets.map { t in try Ledger.watchAnswer(r, t, t.options(position: nil, asOf: asOf)) })
        }
    }

    /// Each target's answer at `position` evaluated at `asOf`, and (when earlier) at the
    /// time `position` was reached: the later of the event there and the user's last
    /// event up to it (events may carry times from the past).
    func answersAt(_ targets: [WatchTarget], _ position: UInt64, asOf: Timestamp) async throws -> [(now: WatchAnswer, settled: WatchAnswer?)] {
        var load = Ledger.watchLoad(targets)
        // (Answers at a position and at the time it was reached: the streams are replayed.)
        load.streams = Array(Set(targets.map(\.user))) + [systemStream]
        if position > 0 { load.log = [(position, 1)] }
        return try await read(load) { r in
            let head = try r.head().seq
            let eventAt = position > 0 && position <= head ? try r.recordedEvent(at: position).event.at : nil
            return try targets.map { t in
                let now = try Ledger.watchAnswer(r, t, t.options(position: position, asOf: asOf)).answer
                let lastAt = try Ledger.state(r, of: t.user, position: position, asOf: .max, fromScratch: false).state.lastAt
                guard let reached = [eventAt, lastAt].compactMap({ $0 }).max(), reached < asOf else { return (now, nil) }
                return (now, try Ledger.watchAnswer(r, t, t.options(position: position, asOf: reached)).answer)
            }
        }
    }

    /// What the answers for `targets` read first: the users' states (`stateLoad`) and the
    /// records of the challenges watched.
    static func watchLoad(_ targets: [WatchTarget]) -> ReadLoad {
        var load = stateLoad(Array(Set(targets.map(\.user))))
        for t in targets where t.projection == .challenge { load.records.append((.challenge, t.user, t.challengeId ?? "")) }
        return load
    }

    static func watchAnswer(_ r: any StorageReader, _ t: WatchTarget, _ o: QueryOptions) throws -> (answer: WatchAnswer, deadline: Timestamp?) {
        switch t.projection {
        case .devices:
            let d = try Ledger.devices(r, t.user, o)
            return (.devices(d), d.cooling.until)
        case .cooling:
            let c = try Ledger.cooling(r, t.user, o)
            return (.cooling(c), c.cooling.until)
        case .pending:
            let p = try Ledger.pending(r, t.user, o)
            return (.pending(p), p.map(\.expiresAt).min())
        case .challenge:
            let id = t.challengeId ?? ""
            let c = try Ledger.challenge(r, id, t.user, o)
            // A pending challenge's answer changes at its expiry: the pending list has it.
            let expires = c.status == "pending" ? try Ledger.pending(r, t.user, o).first { $0.challengeId == id }?.expiresAt : nil
            return (.challenge(c), expires)
        }
    }
}
