/// The `data` of an event: the fields present, ordered by name (``Field/order``).
public struct EventData: Equatable, Sendable {
    /// The fields present, in alphabetical order of their names (``Field/order``).
    public private(set) var entries: [(field: Field, value: FieldValue)]

    /// Empty data; set fields with the subscript.
    public init() { entries = [] }

    /// Equal when the same fields hold the same values.
    public static func == (a: EventData, b: EventData) -> Bool {
        a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.field == $1.field && $0.value == $1.value }
    }

    /// The value of `field`, nil when absent; setting nil removes it, setting a value keeps the name order.
    public subscript(field: Field) -> FieldValue? {
        get {
            for e in entries where e.field == field { return e.value }
            return nil
        }
        set {
            if let i = entries.firstIndex(where: { $0.field == field }) {
                if let newValue { entries[i].value = newValue } else { entries.remove(at: i) }
            } else if let newValue {
                let at = entries.firstIndex { $0.field.order > field.order } ?? entries.count
                entries.insert((field, newValue), at: at)
            }
        }
    }

    package mutating func reserve(_ n: Int) { entries.reserveCapacity(n) }

    /// Appends a field known to come after every present one (decoding stored,
    /// already ordered data); falls back to the ordered insert otherwise.
    package mutating func appendInOrder(_ field: Field, _ value: FieldValue) {
        if let last = entries.last, last.field.order >= field.order {
            self[field] = value
        } else {
            entries.append((field, value))
        }
    }

    /// The value of `f` if it is a string; nil when absent or of another kind.
    public func string(_ f: Field) -> String? { if case let .string(s)? = self[f] { return s }; return nil }
    /// The value of `f` if it is a time; nil when absent or of another kind.
    public func time(_ f: Field) -> Timestamp? { if case let .time(t)? = self[f] { return t }; return nil }
    /// The value of `f` if it is an integer; nil when absent or of another kind.
    public func int(_ f: Field) -> Int64? { if case let .int(i)? = self[f] { return i }; return nil }
    /// The value of `f` if it is a boolean; nil when absent or of another kind.
    public func bool(_ f: Field) -> Bool? { if case let .bool(b)? = self[f] { return b }; return nil }
    /// The value of `f` if it is a string map (`context`); nil when absent or of another kind.
    public func map(_ f: Field) -> StringMap? { if case let .map(m)? = self[f] { return m }; return nil }

    /// The `data` object as recorded: members in alphabetical order.
    public var json: JSON { .object(entries.map { ($0.field.name, $0.value.json) }) }
}
