/// A string-to-string map that keeps its order as given (`meta`, `context`).
public struct StringMap: Equatable, Sendable {
    /// The entries, in the order given.
    public var pairs: [(key: String, value: String)]
    /// A map with these entries, in this order.
    public init(_ pairs: [(key: String, value: String)] = []) { self.pairs = pairs }

    /// The value of the first entry with `key`; nil when there is none.
    public subscript(key: String) -> String? { pairs.first { $0.key == key }?.value }

    /// Equal when the entries and their order are the same (content comparison of SPEC 1.1 ignores the order; this does not).
    public static func == (a: StringMap, b: StringMap) -> Bool {
        a.pairs.count == b.pairs.count && zip(a.pairs, b.pairs).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    /// The map as a JSON object of strings, in its order.
    public var json: JSON { .object(pairs.map { ($0.key, .string($0.value)) }) }
}
