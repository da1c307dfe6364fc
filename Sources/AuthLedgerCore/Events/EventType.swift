/// The event types of SPEC 1.3. Raw values are the storage tags: never renumber.
public enum EventType: UInt8, CaseIterable, Sendable {
    /// `policy.set`: changes policy settings from its position on (stream `$system`).
    case policySet = 1
    /// `device.verification_requested`: an unrecognised device signed in and waits for verification.
    case verificationRequested = 2
    /// `device.registered`: a device was trusted, `via` saying how.
    case registered = 3
    /// `device.renamed`.
    case renamed = 4
    /// `device.accessed`: an active device was used (moves its `lastAccessAt`).
    case accessed = 5
    /// `device.push_token_updated`.
    case pushTokenUpdated = 6
    /// `device.revoked`: one pending or active device was revoked.
    case revoked = 7
    /// `device.all_revoked`: every pending and active device of the user was revoked.
    case allRevoked = 8
    /// `challenge.issued`: a device asks the user's trusted devices to approve an action.
    case challengeIssued = 9
    /// `challenge.approved`.
    case challengeApproved = 10
    /// `challenge.denied`.
    case challengeDenied = 11
    /// `challenge.expired`: records that a challenge's time ran out (it is expired from `expiresAt` on even without it).
    case challengeExpired = 12
    /// `otp.issued`: a one-time code was sent; only its HMAC is recorded.
    case otpIssued = 13
    /// `otp.failed`: a wrong code was given for the OTP.
    case otpFailed = 14
    /// `otp.verified`: the right code was given; it creates a grant.
    case otpVerified = 15
    /// `user.erased`: the user's personal values were erased (SPEC 1.5); appended by erasure only.
    case userErased = 16

    /// The type's name as written in events (`device.registered`, …).
    public var name: String {
        switch self {
        case .policySet: "policy.set"
        case .verificationRequested: "device.verification_requested"
        case .registered: "device.registered"
        case .renamed: "device.renamed"
        case .accessed: "device.accessed"
        case .pushTokenUpdated: "device.push_token_updated"
        case .revoked: "device.revoked"
        case .allRevoked: "device.all_revoked"
        case .challengeIssued: "challenge.issued"
        case .challengeApproved: "challenge.approved"
        case .challengeDenied: "challenge.denied"
        case .challengeExpired: "challenge.expired"
        case .otpIssued: "otp.issued"
        case .otpFailed: "otp.failed"
        case .otpVerified: "otp.verified"
        case .userErased: "user.erased"
        }
    }

    private static let byName: [String: EventType] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    /// The type with this name; nil for an unknown name.
    public init?(name: String) {
        guard let t = EventType.byName[name] else { return nil }
        self = t
    }

    /// Fields of `data`: each with whether it is required.
    public var schema: [(field: Field, required: Bool)] {
        switch self {
        case .policySet:
            return [(.coolingSeconds, false), (.challengeTtlSeconds, false), (.otpTtlSeconds, false),
                    (.otpMaxAttempts, false), (.otpPerHour, false), (.grantTtlSeconds, false),
                    (.maxDevices, false), (.protectCurrentDevice, false)]
        case .verificationRequested:
            return [(.deviceId, true), (.name, false), (.kind, false), (.platform, false), (.channel, false)]
        case .registered:
            return [(.deviceId, true), (.name, true), (.kind, true), (.platform, false), (.appId, false),
                    (.pushToken, false), (.binding, true), (.via, true), (.grantId, false), (.challengeId, false)]
        case .renamed: return [(.deviceId, true), (.name, true)]
        case .accessed: return [(.deviceId, true)]
        case .pushTokenUpdated: return [(.deviceId, true), (.pushToken, true)]
        case .revoked: return [(.deviceId, true), (.reason, false)]
        case .allRevoked: return [(.reason, false)]
        case .challengeIssued:
            return [(.challengeId, true), (.action, true), (.requestingDeviceId, true), (.expiresAt, true), (.context, false)]
        case .challengeApproved: return [(.challengeId, true), (.approverDeviceId, true), (.userVerified, false)]
        case .challengeDenied: return [(.challengeId, true), (.approverDeviceId, true)]
        case .challengeExpired: return [(.challengeId, true)]
        case .otpIssued:
            return [(.otpId, true), (.channel, true), (.target, true), (.codeHash, true), (.expiresAt, true), (.maxAttempts, true)]
        case .otpFailed: return [(.otpId, true)]
        case .otpVerified: return [(.otpId, true), (.grantId, true), (.grantExpiresAt, true)]
        case .userErased: return [(.reason, false)]
        }
    }

    /// Whether this event type opens a cooling window (SPEC 2.5); `via: initial` is exempt.
    var isCoolingOperation: Bool {
        self == .registered || self == .renamed || self == .revoked || self == .allRevoked
    }
}

/// Every field a `data` object may hold. Raw values are storage tags: never renumber.
public enum Field: UInt8, CaseIterable, Sendable {
    case action = 1, appId, approverDeviceId, binding, challengeId, challengeTtlSeconds, channel, codeHash,
         context, coolingSeconds, deviceId, expiresAt, grantExpiresAt, grantId, grantTtlSeconds, kind,
         maxAttempts, maxDevices, name, otpId, otpMaxAttempts, otpPerHour, otpTtlSeconds, platform,
         protectCurrentDevice, pushToken, reason, requestingDeviceId, target, userVerified, via

    /// The kind of value a field holds, which says how it is checked (SPEC 1.4):
    /// `string`: a free string; `id`: an id (1–128 characters); `time`: an RFC 3339 time; `int`: an
    /// integer; `bool`: `true`/`false`; `map`: an object of strings.
    public enum Kind: Sendable { case string, id, time, int, bool, map }

    /// The field's name in `data` (`deviceId`, `expiresAt`, …).
    public var name: String { Field.names[Int(rawValue)] }

    private static let names: [String] = [""] + ["action", "appId", "approverDeviceId", "binding", "challengeId",
        "challengeTtlSeconds", "channel", "codeHash", "context", "coolingSeconds", "deviceId", "expiresAt",
        "grantExpiresAt", "grantId", "grantTtlSeconds", "kind", "maxAttempts", "maxDevices", "name", "otpId",
        "otpMaxAttempts", "otpPerHour", "otpTtlSeconds", "platform", "protectCurrentDevice", "pushToken", "reason",
        "requestingDeviceId", "target", "userVerified", "via"]

    static let byName: [String: Field] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    /// The kind of value this field holds.
    public var kind: Kind {
        switch self {
        case .deviceId, .challengeId, .otpId, .grantId, .requestingDeviceId, .approverDeviceId: .id
        case .expiresAt, .grantExpiresAt: .time
        case .challengeTtlSeconds, .coolingSeconds, .grantTtlSeconds, .maxAttempts, .maxDevices,
             .otpMaxAttempts, .otpPerHour, .otpTtlSeconds: .int
        case .protectCurrentDevice, .userVerified: .bool
        case .context: .map
        default: .string
        }
    }
}

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

/// The value of one `data` field, typed by its field's `kind`.
public enum FieldValue: Equatable, Sendable {
    case string(String)
    case time(Timestamp)
    case int(Int64)
    case bool(Bool)
    case map(StringMap)

    /// The value as it is recorded: a time as its normalised RFC 3339 text, a map as an object.
    public var json: JSON {
        switch self {
        case let .string(s): .string(s)
        case let .time(t): .string(t.formatted)
        case let .int(i): .int(i)
        case let .bool(b): .bool(b)
        case let .map(m): m.json
        }
    }
}

/// The `data` of an event: the fields present, ordered by tag (which is name order).
public struct EventData: Equatable, Sendable {
    /// The fields present, in tag order, which is also alphabetical order of their names.
    public private(set) var entries: [(field: Field, value: FieldValue)]

    /// Empty data; set fields with the subscript.
    public init() { entries = [] }

    /// Equal when the same fields hold the same values.
    public static func == (a: EventData, b: EventData) -> Bool {
        a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.field == $1.field && $0.value == $1.value }
    }

    /// The value of `field`, nil when absent; setting nil removes it, setting a value keeps the tag order.
    public subscript(field: Field) -> FieldValue? {
        get {
            for e in entries where e.field == field { return e.value }
            return nil
        }
        set {
            if let i = entries.firstIndex(where: { $0.field == field }) {
                if let newValue { entries[i].value = newValue } else { entries.remove(at: i) }
            } else if let newValue {
                let at = entries.firstIndex { $0.field.rawValue > field.rawValue } ?? entries.count
                entries.insert((field, newValue), at: at)
            }
        }
    }

    package mutating func reserve(_ n: Int) { entries.reserveCapacity(n) }

    /// Appends a field known to come after every present one (decoding stored,
    /// already ordered data); falls back to the ordered insert otherwise.
    package mutating func appendInOrder(_ field: Field, _ value: FieldValue) {
        if let last = entries.last, last.field.rawValue >= field.rawValue {
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
