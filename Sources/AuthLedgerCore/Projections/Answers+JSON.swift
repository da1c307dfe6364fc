/// The answers read back from their JSON documents (reference 3): what a client of the HTTP
/// API receives, as the same typed values the ledger answers with. `init(json:)` is the
/// inverse of `json`; a document that is not such an answer throws `invalid_event`.
enum AnswerJSON {
    static func object(_ j: JSON, _ what: String) throws(LedgerError) -> JSON {
        guard case .object = j else { throw LedgerError.invalid("\(what) is not a JSON object") }
        return j
    }

    static func string(_ j: JSON, _ key: String) throws(LedgerError) -> String {
        guard let s = j[key]?.stringValue else { throw LedgerError.invalid("missing \(key)", field: key) }
        return s
    }

    static func optionalString(_ j: JSON, _ key: String) -> String? { j[key]?.stringValue }

    static func time(_ j: JSON, _ key: String) throws(LedgerError) -> Timestamp {
        guard let t = optionalTime(j, key) else { throw LedgerError.invalid("missing or malformed time \(key)", field: key) }
        return t
    }

    static func optionalTime(_ j: JSON, _ key: String) -> Timestamp? { j[key]?.stringValue.flatMap { Timestamp(rfc3339: $0) } }

    static func bool(_ j: JSON, _ key: String) -> Bool { j[key] == .bool(true) }
}

extension Cooling {
    /// The window from an answer's `active`/`until` members.
    public init(json j: JSON) throws(LedgerError) {
        active = AnswerJSON.bool(j, "active")
        until = AnswerJSON.optionalTime(j, "until")
    }
}

extension Device {
    /// A device of the `devices` answer from its JSON document.
    public init(json j: JSON) throws(LedgerError) {
        deviceId = try AnswerJSON.string(j, "deviceId")
        name = AnswerJSON.optionalString(j, "name")
        kind = AnswerJSON.optionalString(j, "kind")
        platform = AnswerJSON.optionalString(j, "platform")
        binding = AnswerJSON.optionalString(j, "binding")
        switch try AnswerJSON.string(j, "status") {
        case "pending": status = .pending
        case "active": status = .active
        case "revoked": status = .revoked
        default: throw LedgerError.invalid("unknown device status", field: "status")
        }
        via = AnswerJSON.optionalString(j, "via")
        requestedAt = AnswerJSON.optionalTime(j, "requestedAt")
        registeredAt = AnswerJSON.optionalTime(j, "registeredAt")
        lastAccessAt = AnswerJSON.optionalTime(j, "lastAccessAt")
        pushEnrolled = AnswerJSON.bool(j, "pushEnrolled")
        current = AnswerJSON.bool(j, "current")
        keyThumbprint = AnswerJSON.optionalString(j, "keyThumbprint")
    }
}

extension DeviceList {
    /// The `devices` answer from its JSON document.
    public init(json: JSON) throws(LedgerError) {
        let j = try AnswerJSON.object(json, "a devices answer")
        user = try AnswerJSON.string(j, "user")
        guard let p = j["position"]?.intValue, p >= 0 else { throw LedgerError.invalid("missing position", field: "position") }
        position = UInt64(p)
        asOf = try AnswerJSON.time(j, "asOf")
        guard let list = j["devices"]?.arrayValue, let c = j["cooling"] else { throw LedgerError.invalid("missing devices", field: "devices") }
        var devices: [Device] = []
        for d in list { devices.append(try Device(json: d)) }
        self.devices = devices
        cooling = try Cooling(json: c)
        erased = AnswerJSON.bool(j, "erased")
    }
}

extension CoolingAnswer {
    /// The `cooling` answer from its JSON document.
    public init(json: JSON) throws(LedgerError) {
        let j = try AnswerJSON.object(json, "a cooling answer")
        user = try AnswerJSON.string(j, "user")
        cooling = try Cooling(json: j)
        erased = AnswerJSON.bool(j, "erased")
    }
}

extension PendingChallenge {
    /// One challenge of the `pending` answer from its JSON document.
    public init(json: JSON) throws(LedgerError) {
        let j = try AnswerJSON.object(json, "a pending challenge")
        challengeId = try AnswerJSON.string(j, "challengeId")
        action = try AnswerJSON.string(j, "action")
        requestingDeviceId = try AnswerJSON.string(j, "requestingDeviceId")
        issuedAt = try AnswerJSON.time(j, "issuedAt")
        expiresAt = try AnswerJSON.time(j, "expiresAt")
        guard case let .object(members)? = j["context"] else { throw LedgerError.invalid("missing context", field: "context") }
        context = members.map { ($0.0, $0.1.stringValue) }
        erased = AnswerJSON.bool(j, "erased")
        nonce = AnswerJSON.optionalString(j, "nonce")
    }

    /// The `pending` answer (an array) from its JSON document.
    public static func list(json: JSON) throws(LedgerError) -> [PendingChallenge] {
        guard let items = json.arrayValue else { throw LedgerError.invalid("a pending answer is a JSON array") }
        var out: [PendingChallenge] = []
        for item in items { out.append(try PendingChallenge(json: item)) }
        return out
    }
}

extension ChallengeView {
    /// The `challenge` answer from its JSON document (either view).
    public init(json: JSON) throws(LedgerError) {
        let j = try AnswerJSON.object(json, "a challenge answer")
        challengeId = try AnswerJSON.string(j, "challengeId")
        status = try AnswerJSON.string(j, "status")
        outcome = switch j["outcome"]?.stringValue {
        case "pending": .pending
        case "approved": .approved
        case "denied": .denied
        case "expired": .expired
        case nil: nil
        default: throw LedgerError.invalid("unknown outcome", field: "outcome")
        }
        erased = AnswerJSON.bool(j, "erased")
    }
}
