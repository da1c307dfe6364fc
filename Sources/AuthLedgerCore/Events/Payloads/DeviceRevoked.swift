/// `device.revoked`: one pending or active device was revoked.
public struct DeviceRevoked: Equatable, Sendable {
    /// The device's id.
    public var deviceId: String
    /// Why, in the caller's words (free text), if given.
    public var reason: String?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(deviceId: String, reason: String? = nil) {
        self.deviceId = deviceId
        self.reason = reason
    }

    init(_ d: EventData) throws(LedgerError) {
        try self.init(deviceId: d.need(.deviceId, .revoked, EventData.string), reason: d.string(.reason))
    }

    var data: EventData { EventData([(.deviceId, .text(deviceId)), (.reason, .text(reason))]) }
}
