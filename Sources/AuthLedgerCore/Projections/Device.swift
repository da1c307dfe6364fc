/// A device as the `devices` answer lists it (reference section 3.1).
public struct Device: Sendable, Equatable, Encodable {
    /// The device's id.
    public var deviceId: String
    /// The trimmed name; nil once erased.
    public var name: String?
    /// What kind of device it is; nil while it never said.
    public var kind: String?
    /// The device's platform, if it said.
    public var platform: String?
    /// `permanent` or `temporary`; nil while the device was never registered.
    public var binding: String?
    /// `pending`, `active` or `revoked`.
    public var status: DeviceStatus
    /// How it was registered (`email_link`, `trusted_device`, `otp`, …); nil while never registered.
    public var via: String?
    /// When a device that was never registered asked to be (nil for registered ones).
    public var requestedAt: Timestamp?
    /// When it was registered; nil while never registered.
    public var registeredAt: Timestamp?
    /// When it was last registered or used; nil while never registered.
    public var lastAccessAt: Timestamp?
    /// Whether it is active with a push token.
    public var pushEnrolled: Bool
    /// Whether it is the device the caller named as its own.
    public var current: Bool
    /// The RFC 7638 thumbprint of the device's current key (SPEC 11); nil when it has none.
    public var keyThumbprint: String?

    /// The device `d` as listed for a caller whose own device is `current`.
    public init(_ d: DeviceRecord, current: String?) {
        let registered = d.status != .pending && d.registeredAt != nil
        deviceId = d.deviceId
        name = d.name.map(EventDecoder.trimName)
        kind = d.kind
        platform = d.platform
        binding = registered ? d.binding : nil
        status = d.status
        via = registered ? d.via : nil
        requestedAt = registered ? nil : d.requestedAt
        registeredAt = registered ? d.registeredAt : nil
        lastAccessAt = registered ? d.lastAccessAt : nil
        pushEnrolled = d.pushToken != nil && d.status == .active
        self.current = current != nil && d.deviceId == current
        keyThumbprint = d.publicKey?.thumbprint
    }

    /// Whether the device was ever registered (a pending one shows `requestedAt` instead).
    public var wasRegistered: Bool { status != .pending && registeredAt != nil }

    /// Exactly the members of the reference, in its order: `requestedAt` only for a device
    /// that was never registered, whose `registeredAt`, `lastAccessAt`, `binding` and `via` are null.
    public var json: JSON {
        var m: [(String, JSON)] = [
            ("deviceId", .string(deviceId)), ("name", .optional(name)), ("kind", .optional(kind)),
            ("platform", .optional(platform)), ("binding", .optional(binding)), ("status", .string(status.name)),
            ("via", .optional(via)),
        ]
        if !wasRegistered { m.append(("requestedAt", .optional(requestedAt?.formatted))) }
        m += [
            ("registeredAt", .optional(registeredAt?.formatted)), ("lastAccessAt", .optional(lastAccessAt?.formatted)),
            ("pushEnrolled", .bool(pushEnrolled)), ("current", .bool(current)),
            ("hasKey", .bool(keyThumbprint != nil)), ("keyThumbprint", .optional(keyThumbprint)),
        ]
        return .object(m)
    }

    /// Encodes the answer as its JSON document (``json``).
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
