/// `device.revoked`: one pending or active device was revoked.
public struct DeviceRevoked: Equatable, Sendable {
    public var deviceId: String
    public var reason: String?

    public init(deviceId: String, reason: String? = nil) {
        self.deviceId = deviceId
        self.reason = reason
    }

    init(_ d: EventData) throws(LedgerError) {
        try self.init(deviceId: d.need(.deviceId, .revoked, EventData.string), reason: d.string(.reason))
    }

    var data: EventData { EventData([(.deviceId, .text(deviceId)), (.reason, .text(reason))]) }
}
