/// Reading the answers of reference section 3 back from their JSON documents: what a client
/// on another host (`AuthLedgerClient`) gets over HTTP becomes the same typed value the ledger
/// answers in process. Each `init(json:)` is the inverse of the type's `json`: it takes exactly
/// the members `json` writes and refuses a document that is not one (`invalid_event` naming the
/// member), so a server that answered something else than the contract is noticed, not guessed.
struct AnswerReader {
    let members: [(String, JSON)]
    let path: String

    init(_ json: JSON, path: String) throws(LedgerError) {
        guard let m = json.objectValue else { throw .invalid("\(path) is not an object", field: path) }
        members = m
        self.path = path
    }

    func value(_ key: String) -> JSON? { members.first { $0.0 == key }?.1 }

    func fail(_ key: String, _ what: String) -> LedgerError { .invalid("\(path).\(key) \(what)", field: "\(path).\(key)") }

    func string(_ key: String) throws(LedgerError) -> String {
        guard let s = value(key)?.stringValue else { throw fail(key, "is not a string") }
        return s
    }

    /// A member that is a string or `null` (or absent).
    func optionalString(_ key: String) throws(LedgerError) -> String? {
        switch value(key) {
        case nil, .null?: return nil
        case let .string(s)?: return s
        default: throw fail(key, "is not a string or null")
        }
    }

    func bool(_ key: String, default d: Bool? = nil) throws(LedgerError) -> Bool {
        if let b = value(key)?.boolValue { return b }
        if value(key) == nil, let d { return d }
        throw fail(key, "is not a boolean")
    }

    func position(_ key: String) throws(LedgerError) -> UInt64 {
        guard let i = value(key)?.intValue, i >= 0 else { throw fail(key, "is not a position") }
        return UInt64(i)
    }

    func time(_ key: String) throws(LedgerError) -> Timestamp {
        guard let t = Timestamp(rfc3339: try string(key)) else { throw fail(key, "is not an RFC 3339 time") }
        return t
    }

    func optionalTime(_ key: String) throws(LedgerError) -> Timestamp? {
        guard let s = try optionalString(key) else { return nil }
        guard let t = Timestamp(rfc3339: s) else { throw fail(key, "is not an RFC 3339 time") }
        return t
    }

    func object(_ key: String) throws(LedgerError) -> AnswerReader {
        guard let v = value(key) else { throw fail(key, "is missing") }
        return try AnswerReader(v, path: "\(path).\(key)")
    }
}

extension DeviceStatus {
    /// The status named `name` (`pending`, `active`, `revoked`), as answers write it.
    public init?(name: String) {
        switch name {
        case "pending": self = .pending
        case "active": self = .active
        case "revoked": self = .revoked
        default: return nil
        }
    }
}

extension ChallengeOutcome {
    /// The outcome named `name` (`pending`, `approved`, `denied`, `expired`), as answers write it.
    public init?(name: String) {
        switch name {
        case "pending": self = .pending
        case "approved": self = .approved
        case "denied": self = .denied
        case "expired": self = .expired
        default: return nil
        }
    }
}

extension Cooling {
    /// The window as a `devices` or `cooling` answer writes it (``json`` or ``members``).
    public init(json: JSON) throws(LedgerError) {
        try self.init(AnswerReader(json, path: "cooling"))
    }

    init(_ r: AnswerReader) throws(LedgerError) {
        active = try r.bool("active")
        until = try r.optionalTime("until")
    }
}

extension Device {
    /// A device as the `devices` answer lists it (the inverse of ``json``).
    public init(json: JSON) throws(LedgerError) {
        let r = try AnswerReader(json, path: "device")
        deviceId = try r.string("deviceId")
        name = try r.optionalString("name")
        kind = try r.optionalString("kind")
        platform = try r.optionalString("platform")
        binding = try r.optionalString("binding")
        guard let s = DeviceStatus(name: try r.string("status")) else { throw r.fail("status", "is not pending, active or revoked") }
        status = s
        via = try r.optionalString("via")
        requestedAt = try r.optionalTime("requestedAt")
        registeredAt = try r.optionalTime("registeredAt")
        lastAccessAt = try r.optionalTime("lastAccessAt")
        pushEnrolled = try r.bool("pushEnrolled")
        current = try r.bool("current")
        keyThumbprint = try r.optionalString("keyThumbprint")
    }
}

extension DeviceList {
    /// The `devices` answer read from its JSON document (the inverse of ``json``).
    public init(json: JSON) throws(LedgerError) {
        let r = try AnswerReader(json, path: "devices answer")
        user = try r.string("user")
        position = try r.position("position")
        asOf = try r.time("asOf")
        guard let list = r.value("devices")?.arrayValue else { throw r.fail("devices", "is not an array") }
        var devices: [Device] = []
        for d in list { devices.append(try Device(json: d)) }
        self.devices = devices
        cooling = try Cooling(r.object("cooling"))
        erased = try r.bool("erased", default: false)
    }
}

extension CoolingAnswer {
    /// The `cooling` answer read from its JSON document (the inverse of ``json``).
    public init(json: JSON) throws(LedgerError) {
        let r = try AnswerReader(json, path: "cooling answer")
        user = try r.string("user")
        cooling = try Cooling(r)
        erased = try r.bool("erased", default: false)
    }
}

extension PendingChallenge {
    /// One challenge of the `pending` answer read from its JSON document (the inverse of ``json``).
    public init(json: JSON) throws(LedgerError) {
        let r = try AnswerReader(json, path: "pending challenge")
        challengeId = try r.string("challengeId")
        action = try r.string("action")
        requestingDeviceId = try r.string("requestingDeviceId")
        issuedAt = try r.time("issuedAt")
        expiresAt = try r.time("expiresAt")
        let c = try r.object("context")
        var context: [(key: String, value: String?)] = []
        for (key, _) in c.members { context.append((key, try c.optionalString(key))) }
        self.context = context
        erased = try r.bool("erased", default: false)
        nonce = try r.optionalString("nonce")
    }

    /// The `pending` answer (an array of challenges) read from its JSON document.
    public static func list(json: JSON) throws(LedgerError) -> [PendingChallenge] {
        guard let items = json.arrayValue else { throw .invalid("the pending answer is not an array", field: "pending answer") }
        var out: [PendingChallenge] = []
        for item in items { out.append(try PendingChallenge(json: item)) }
        return out
    }
}

extension ChallengeView {
    /// The `challenge` answer read from its JSON document (the inverse of ``json``).
    public init(json: JSON) throws(LedgerError) {
        let r = try AnswerReader(json, path: "challenge answer")
        challengeId = try r.string("challengeId")
        status = try r.string("status")
        guard ["pending", "approved", "not_approved"].contains(status) else {
            throw r.fail("status", "is not pending, approved or not_approved")
        }
        if let name = try r.optionalString("outcome") {
            guard let o = ChallengeOutcome(name: name) else { throw r.fail("outcome", "is not pending, approved, denied or expired") }
            outcome = o
        } else {
            outcome = nil
        }
        erased = try r.bool("erased", default: false)
    }
}

extension RecordedEvent {
    /// A recorded event (the form `export`, `history` and the feed write) read from its JSON
    /// document: decoded and checked as `import` decodes a recorded-form line, with its
    /// `seq`, `version`, `prev` and `hash` as given (nothing recomputed: the chain is checked by
    /// whoever holds the log; the client reads what the server sent).
    public init(json: JSON) throws(LedgerError) {
        let input = try EventDecoder.decode(json)
        guard let seq = input.claims.seq, let version = input.claims.version, let prev = input.claims.prev,
              let hash = input.claims.hash, input.event.id != nil
        else { throw .invalid("a recorded event has id, seq, version, prev and hash", field: "seq") }
        self.init(event: input.event, seq: seq, version: version, prev: prev, hash: hash)
    }
}
