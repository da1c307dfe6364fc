/// `device.push_token_updated`.
public struct DevicePushTokenUpdated: Equatable, Sendable {
    /// The device's id.
    public var deviceId: String
    /// The new token; nil once erased.
    public var pushToken: String?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(deviceId: String, pushToken: String?) {
        self.deviceId = deviceId
        self.pushToken = pushToken
    }

    init(_ d: EventData) throws(LedgerError) {
        try self.init(deviceId: d.need(.deviceId, .pushTokenUpdated, EventData.string), pushToken: d.string(.pushToken))
    }

    var data: EventData { EventData([(.deviceId, .text(deviceId)), (.pushToken, .text(pushToken))]) }
}
