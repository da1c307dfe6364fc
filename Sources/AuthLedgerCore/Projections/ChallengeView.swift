/// The `challenge` answer (reference section 3.4): what a challenge came to, at a time.
public struct ChallengeView: Sendable, Equatable, Encodable {
    /// The challenge's id.
    public var challengeId: String
    /// `pending`, `approved` or `not_approved`: what the requester may learn (a denial and
    /// an expiry look the same).
    public var status: String
    /// `pending`, `approved`, `denied` or `expired`; nil in the requester's view.
    public var outcome: ChallengeOutcome?
    /// Whether the user's personal values were erased.
    public var erased: Bool

    /// Challenge `c` at `o.asOf`, the requester's view with `o.asRequester`.
    public init(_ c: ChallengeRecord, options o: QueryOptions, erased: Bool = false) {
        let outcome = c.outcome(at: o.asOf)
        challengeId = c.challengeId
        status = switch outcome {
        case .pending: "pending"
        case .approved: "approved"
        case .denied, .expired: "not_approved"
        }
        self.outcome = o.asRequester ? nil : outcome
        self.erased = erased
    }

    /// The answer as the API writes it: its JSON document, member for member.
    public var json: JSON {
        var m: [(String, JSON)] = [("challengeId", .string(challengeId)), ("status", .string(status))]
        if let outcome { m.append(("outcome", .string(outcome.name))) }
        if erased { m.append(("erased", .bool(true))) }
        return .object(m)
    }

    /// Encodes the answer as its JSON document (``json``).
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
