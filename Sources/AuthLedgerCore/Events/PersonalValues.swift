import Crypto

/// The personal values of one event: a commitment per value, hashed instead of the value.
public struct PersonalValues: Equatable, Sendable {
    /// One entry per personal value of the event, disclosed or erased.
    public var entries: [PersonalEntry]

    /// The commitments of one event.
    public init(_ entries: [PersonalEntry] = []) { self.entries = entries }

    /// Whether some value of the event was erased.
    public var hasErased: Bool { entries.contains { $0.salt == nil } }

    /// The entry at `pointer`, e.g. `/data/name`; nil when that value is not personal or not present.
    public func entry(_ pointer: String) -> PersonalEntry? { entries.first { $0.pointer == pointer } }

    /// `{"<pointer>": "<salt>"}` of the disclosed values: the recorded form's `disclosures`.
    public var disclosures: StringMap {
        StringMap(entries.compactMap { e in e.salt.map { (e.pointer, $0) } })
    }
}
