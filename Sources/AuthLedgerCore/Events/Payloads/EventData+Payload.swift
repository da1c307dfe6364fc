/// Reading a payload out of checked `data`: a field the type requires is there (the
/// decoder and the codec saw to it), so a missing one is `invalid_event`, never a crash.
extension EventData {
    func need<T>(_ f: Field, _ type: EventType, _ get: (EventData) -> (Field) -> T?) throws(LedgerError) -> T {
        guard let v = get(self)(f) else { throw .invalid("missing field \"data.\(f.name)\" for \(type.name)", field: "data.\(f.name)") }
        return v
    }

    /// Builds data from the fields a payload has, skipping the absent ones.
    init(_ fields: [(Field, FieldValue?)]) {
        self.init()
        reserve(fields.count)
        for case let (f, v?) in fields { appendInOrder(f, v) }
    }
}

extension FieldValue {
    static func text(_ s: String?) -> FieldValue? { s.map { .string($0) } }
    static func text<R: RawRepresentable<String>>(_ r: R?) -> FieldValue? { r.map { .string($0.rawValue) } }
}
