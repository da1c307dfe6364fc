import AuthLedger
/// Round-trip properties of every decoder that reads untrusted bytes, for the fuzzers
/// (`tools/fuzz`) and their regression tests. Each function accepts any bytes and must
/// never crash; when a decoded value does not survive re-encoding it throws a
/// ``FuzzFailure`` (the fuzz target then stops the process, which libFuzzer records; a test
/// records an issue): a bug, to be kept as a regression fixture and fixed.
public enum CodecSelfCheck {
    /// Fixture/recorded JSONL (`import`): every decoded event, recorded and exported,
    /// decodes back to the same content with the same hash, and survives the storage codec.
    public static func fixtureLines(_ bytes: [UInt8]) throws {
        guard let decoded = try? EventDecoder.decodeLines(bytes) else { return }
        for (input, _) in decoded { try recordedRoundTrip(input.event) }
    }

    /// A JSON body of fixture-form events (what `POST /v1/events` carries): an array of
    /// event objects, or one object; decoded like the service decodes them.
    public static func eventsBody(_ bytes: [UInt8]) throws {
        guard let json = try? JSON.parse(bytes) else { return }
        let items: [JSON]
        switch json {
        case let .array(a): items = a
        case let .object(members):
            items = members.first { $0.0 == "events" }?.1.arrayValue ?? [json]
        default: return
        }
        for var item in items {
            // As the service does: a per-event `expectedVersion` is taken off before decoding.
            if case let .object(members) = item { item = .object(members.filter { $0.0 != "expectedVersion" }) }
            guard let input = try? EventDecoder.decode(item) else { continue }
            try recordedRoundTrip(input.event)
        }
    }

    /// The strict JSON parser: what it accepts re-serialises (both forms) to text it parses back the same.
    public static func json(_ bytes: [UInt8]) throws {
        guard let value = try? JSON.parse(bytes) else { return }
        let text = Array(value.serialized().utf8)
        guard let again = try? JSON.parse(text) else { throw FuzzFailure("serialized JSON does not parse: \(String(decoding: text, as: UTF8.self))") }
        try FuzzFailure.require(again == value, "serialized JSON parses to another value")
        let canonical = value.canonicalBytes()
        guard let c = try? JSON.parse(canonical) else { throw FuzzFailure("canonical JSON does not parse") }
        try FuzzFailure.require(c.canonicalBytes() == canonical, "canonical JSON is not idempotent")
    }

    /// Stored event bytes (`events` database): decoding never crashes; a decoded event re-encodes to bytes that decode the same.
    public static func storedEvent(_ bytes: [UInt8]) throws {
        guard let r = try? bytes.withUnsafeBytes({ try EventCodec.decode($0, seq: 1) }) else { return }
        // What verify and export do with a stored event: hash it, write it as JSON.
        _ = RecordedEvent.computeHash(r.event, seq: 1, version: r.version, prev: r.prev)
        _ = r.json.serialized()
        let enc = EventCodec.encode(r)
        guard let again = try? enc.withUnsafeBytes({ try EventCodec.decode($0, seq: 1) }) else { throw FuzzFailure("re-encoded event does not decode") }
        try FuzzFailure.require(again == r, "re-encoded event decodes to another event")
        try FuzzFailure.require(EventCodec.encode(again) == enc, "event encoding is not stable")
    }

    /// Stored projection state (`states` database), user and `$system` forms.
    public static func storedState(_ bytes: [UInt8]) throws {
        if let s = try? bytes.withUnsafeBytes({ try StateCodec.decode($0, user: "u") }) {
            let enc = StateCodec.encode(s)
            guard let again = try? enc.withUnsafeBytes({ try StateCodec.decode($0, user: "u") }) else { throw FuzzFailure("re-encoded state does not decode") }
            try FuzzFailure.require(again == s, "re-encoded state decodes to another state")
        }
        if let s = try? bytes.withUnsafeBytes({ try StateCodec.decodeSystem($0) }) {
            let enc = StateCodec.encode(s)
            guard let again = try? enc.withUnsafeBytes({ try StateCodec.decodeSystem($0) }) else { throw FuzzFailure("re-encoded system state does not decode") }
            try FuzzFailure.require(again == s, "re-encoded system state decodes to another state")
        }
    }

    /// Seeds for the storage fuzzers: the encodings of the events and states of `fixture`.
    public static func storageSeeds(fixture: [UInt8]) throws -> (events: [[UInt8]], states: [[UInt8]]) {
        var prev = Hash32.zero
        var events: [[UInt8]] = [], states: [[UInt8]] = []
        var users: [String: UserState] = [:]
        var system = SystemState()
        for (k, (input, _)) in try EventDecoder.decodeLines(fixture).enumerated() {
            var e = input.event
            if e.id == nil { e.id = EventID(high: UInt64(k), low: 7) }
            let seq = UInt64(k + 1)
            if let user = e.user { try users[user, default: UserState(user: user)].evolve(e, policy: system.policy) } else { try system.evolve(e) }
            let version = e.user.map { users[$0]!.version } ?? system.version
            let r = RecordedEvent(event: e, seq: seq, version: version, prev: prev, hash: RecordedEvent.computeHash(e, seq: seq, version: version, prev: prev))
            prev = r.hash
            events.append(EventCodec.encode(r))
        }
        states = users.values.map { StateCodec.encode($0) } + [StateCodec.encode(system)]
        return (events, states)
    }

    static func recordedRoundTrip(_ event: Event) throws {
        var e = event
        if e.id == nil { e.id = EventID(high: 1, low: 2) }
        let r = RecordedEvent(event: e, seq: 1, version: 1, prev: .zero, hash: RecordedEvent.computeHash(e, seq: 1, version: 1, prev: .zero))
        let line = Array(r.json.serialized().utf8)
        guard let again = try? EventDecoder.decode(line: line) else {
            throw FuzzFailure("an accepted event's recorded form is refused: \(String(decoding: line, as: UTF8.self))")
        }
        try FuzzFailure.require(again.event == e, "the recorded form decodes to another event")
        try FuzzFailure.require(RecordedEvent.computeHash(again.event, seq: 1, version: 1, prev: .zero) == r.hash, "the recorded form hashes differently")
        try FuzzFailure.require(again.claims.hash == r.hash && again.claims.seq == 1 && again.claims.version == 1, "recorded claims do not round-trip")
        let stored = EventCodec.encode(r)
        guard let back = try? stored.withUnsafeBytes({ try EventCodec.decode($0, seq: 1) }) else { throw FuzzFailure("an accepted event does not survive the storage codec") }
        try FuzzFailure.require(back == r, "the storage codec changes an event")
        try FuzzFailure.require(RecordedEvent.computeHash(back.event, seq: 1, version: 1, prev: .zero) == r.hash, "a stored event hashes differently")
    }
}
