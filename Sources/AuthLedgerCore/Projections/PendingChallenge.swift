/// One challenge of the `pending` answer (reference section 3.3).
public struct PendingChallenge: Sendable, Equatable, Encodable {
    /// The challenge's id.
    public var challengeId: String
    /// What the requester asks to do (`login`, …).
    public var action: String
    /// The device that asked for the approval.
    public var requestingDeviceId: String
    /// When it was issued.
    public var issuedAt: Timestamp
    /// From this time on it is expired.
    public var expiresAt: Timestamp
    /// The context shown to the approver, in its order; a nil value was erased.
    public var context: [(key: String, value: String?)]
    /// Whether the user's personal values were erased.
    public var erased: Bool
    /// The nonce a signed answer covers (reference section 11.3); nil for a challenge without one.
    public var nonce: String?

    /// Challenge `c` as listed for a user whose personal values were (not) erased.
    public init(_ c: ChallengeRecord, erased: Bool) {
        challengeId = c.challengeId
        action = c.action
        requestingDeviceId = c.requestingDeviceId
        issuedAt = c.issuedAt
        expiresAt = c.expiresAt
        context = (c.context?.pairs ?? []).map { p in (p.key, p.value == PersonalData.erasedMarker ? nil : p.value) }
        self.erased = erased
        nonce = c.nonce
    }

    /// `context` is `{}` when the challenge has none.
    public var json: JSON {
        .object([
            ("challengeId", .string(challengeId)), ("action", .string(action)),
            ("requestingDeviceId", .string(requestingDeviceId)),
            ("issuedAt", .string(issuedAt.formatted)), ("expiresAt", .string(expiresAt.formatted)),
            ("context", .object(context.map { ($0.key, .optional($0.value)) })),
        ] + (nonce.map { [("nonce", JSON.string($0))] } ?? []) + Views.erasedMember(erased))
    }

    /// Encodes the answer as its JSON document (``json``).
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }

    /// Equal when their JSON documents are.
    public static func == (a: PendingChallenge, b: PendingChallenge) -> Bool { a.json == b.json }
}

extension [PendingChallenge] {
    /// The `pending` answer as the API writes it: each challenge's document, in order.
    public var json: JSON { .array(map(\.json)) }
}
