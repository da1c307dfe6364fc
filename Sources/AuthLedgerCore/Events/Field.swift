/// Every field a `data` object may hold. Raw values are storage tags: never renumber.
public enum Field: UInt8, CaseIterable, Sendable {
    /// The fields, tagged in name order (the tags are storage tags: never renumber).
    case action = 1, appId, approverDeviceId, binding, challengeId, challengeTtlSeconds, channel, codeHash,
         context, coolingSeconds, deviceId, expiresAt, grantExpiresAt, grantId, grantTtlSeconds, kind,
         maxAttempts, maxDevices, name, otpId, otpMaxAttempts, otpPerHour, otpTtlSeconds, platform,
         protectCurrentDevice, pushToken, reason, requestingDeviceId, target, userVerified, via
    /// Fields added later (device proofs): their tags follow the first ones, so tag order is
    /// no longer name order; ``Field/order`` is (never renumber these either).
    case linkExpiresAt = 32, linkHash, nonce, publicKey, signature, verificationId, requireSignedApprovals,
         verificationLinkTtlSeconds

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
        "requestingDeviceId", "target", "userVerified", "via", "linkExpiresAt", "linkHash", "nonce", "publicKey",
        "signature", "verificationId", "requireSignedApprovals", "verificationLinkTtlSeconds"]

    /// The field's position in name order (UTF-16, as RFC 8785 sorts keys): how `data`
    /// entries are ordered. The first 31 fields keep their tag order.
    public var order: UInt8 { Field.orders[Int(rawValue)] }

    private static let orders: [UInt8] = {
        var out = [UInt8](repeating: 0, count: names.count)
        let sorted = allCases.sorted { JSON.utf16Less($0.name, $1.name) }
        for (i, f) in sorted.enumerated() { out[Int(f.rawValue)] = UInt8(i + 1) }
        return out
    }()

    static let byName: [String: Field] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    /// The kind of value this field holds.
    public var kind: Kind {
        switch self {
        case .deviceId, .challengeId, .otpId, .grantId, .requestingDeviceId, .approverDeviceId: .id
        case .verificationId: .id
        case .expiresAt, .grantExpiresAt, .linkExpiresAt: .time
        case .challengeTtlSeconds, .coolingSeconds, .grantTtlSeconds, .maxAttempts, .maxDevices,
             .otpMaxAttempts, .otpPerHour, .otpTtlSeconds, .verificationLinkTtlSeconds: .int
        case .protectCurrentDevice, .userVerified, .requireSignedApprovals: .bool
        case .context, .publicKey: .map
        default: .string
        }
    }
}
