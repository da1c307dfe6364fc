/// Every field a `data` object may hold. Raw values are storage tags: never renumber.
public enum Field: UInt8, CaseIterable, Sendable {
    /// The fields, tagged in name order (the tags are storage tags: never renumber).
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
