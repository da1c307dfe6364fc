/// One device of a user as the rules and the `devices` answer see it, folded from its events.
public struct DeviceRecord: Equatable, Sendable {
    /// The device's id, unique within its user (`data.deviceId`).
    public var deviceId: String
    /// The name as recorded (untrimmed; answers trim it); nil for a pending device that gave none,
    /// and after an erasure (SPEC 1.5).
    public var name: String?
    /// `mobile`, `tablet`, `desktop`, `browser` or `other`; nil for a pending device that gave none.
    public var kind: String?
    /// The platform the device reported (`ios`, `android`, …), if any; a registration without one keeps the pending request's.
    public var platform: String?
    /// The app id given at registration, if any.
    public var appId: String?
    /// The push token, if any; `PersonalData.erasedMarker` once erased (the device stays push-enrolled).
    public var pushToken: String?
    /// `permanent` or `temporary`, from the registration; nil while the device was never registered.
    public var binding: String?
    /// How the device was trusted (`initial`, `email_link`, `otp`, `trusted_device`, `admin`); nil while never registered.
    public var via: String?
    /// Whether the device is pending, active or revoked.
    public var status: DeviceStatus
    /// The time of its latest `device.verification_requested`, if it had one.
    public var requestedAt: Timestamp?
    /// The time of its `device.registered`; nil while never registered.
    public var registeredAt: Timestamp?
    /// The time of its latest `device.accessed`, starting at `registeredAt`; nil while never registered.
    public var lastAccessAt: Timestamp?
    /// When it was revoked (by `device.revoked` or `device.all_revoked`); nil while not revoked.
    public var revokedAt: Timestamp?
    /// The device's current key (SPEC 11): from its registration or its latest `device.key_rotated`.
    public var publicKey: DeviceKey?
    /// The `verificationId` of the device's latest verification request, while it is pending.
    public var verificationId: String?
    /// The keyed hash of that request's link token, when it has one (a registration then needs the link).
    public var linkHash: String?
    /// When that request's link token expires.
    public var linkExpiresAt: Timestamp?

    /// A device with only its id and status; every other field nil.
    public init(deviceId: String, status: DeviceStatus) {
        self.deviceId = deviceId
        self.status = status
    }

    /// Listing order key: registration time, or request time while pending.
    var sortTime: Timestamp { registeredAt ?? requestedAt ?? .min }
}
