/// An event to append, as decoded from input, with any recorded-form claims.
public struct EventInput: Sendable {
    /// The event's content.
    public var event: Event
    /// What the line claims about its position and chain; empty for the fixture form.
    public var claims: RecordedClaims
    /// The recorded form's `disclosures` (pointer → salt): the salts of its clear personal values.
    public var disclosures: StringMap?
    /// An input with these parts.
    public init(event: Event, claims: RecordedClaims = RecordedClaims(), disclosures: StringMap? = nil) {
        self.event = event
        self.claims = claims
        self.disclosures = disclosures
    }
}
