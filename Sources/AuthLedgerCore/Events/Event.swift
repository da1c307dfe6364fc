/// The stream of `policy.set` events.
public let systemStream = "$system"

/// An event's content: what a fixture line says, with its id once assigned.
public struct Event: Equatable, Sendable {
    /// The event's id; nil until the ledger assigns one (a version 7 UUID) when it appends the event.
    public var id: EventID?
    /// What happened: one of the types of SPEC 1.3.
    public var type: EventType
    /// The stream key; nil for `policy.set` (stream `$system`).
    public var user: String?
    /// When it happened; within a stream, `at` never goes backwards (SPEC 2.1).
    public var at: Timestamp
    /// The fields of the type (SPEC 1.3); personal values that were erased are absent.
    public var data: EventData
    /// The `meta` strings (`actor`, `correlationId`, `ip`, …), if any.
    public var meta: StringMap?
    /// The commitments of the personal values (SPEC 1.5): salts of the disclosed values,
    /// digests of every one (erased values are absent from `data` and `meta`).
    public var personal: PersonalValues?

    /// An event with this content; nothing is checked until it is appended or decoded.
    public init(id: EventID? = nil, type: EventType, user: String?, at: Timestamp, data: EventData, meta: StringMap? = nil,
                personal: PersonalValues? = nil) {
        self.id = id
        self.type = type
        self.user = user
        self.at = at
        self.data = data
        self.meta = meta
        self.personal = personal
    }

    /// The stream the event belongs to: its user, or `$system` for `policy.set`.
    public var stream: String { user ?? systemStream }

    /// `meta.actor`, if any.
    public var actor: String? { meta?["actor"] }

    /// Same content, ignoring the id (for idempotent re-appends). Content is JSON: the
    /// order of members in `meta` and `context` is not content (SPEC 1.1 "identical").
    /// Salts are not content either: a personal value is the same when its clear value
    /// is, or, where one side has only a commitment, when the commitments are (an erased
    /// value cannot be compared with a clear one that has no salt: that counts as the same).
    package func sameContent(as other: Event) -> Bool {
        guard type == other.type, user == other.user, at == other.at else { return false }
        if personal?.hasErased == true || other.personal?.hasErased == true {
            return PersonalData.sameContent(self, other)
        }
        if data == other.data && meta == other.meta { return true }
        return data.json.canonicalBytes() == other.data.json.canonicalBytes()
            && meta?.json.canonicalBytes() == other.meta?.json.canonicalBytes()
    }
}
