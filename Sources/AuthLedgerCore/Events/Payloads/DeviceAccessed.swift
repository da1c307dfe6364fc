/// `device.accessed`: an active device was used.
public struct DeviceAccessed: Equatable, Sendable {
    /// The device's id.
    public var deviceId: String

    /// A payload with these fields; nothing is checked until it is appended.
    public init(deviceId: String) { self.deviceId = deviceId }

    init(_ d: EventData) throws(LedgerError) { try self.init(deviceId: d.need(.deviceId, .accessed, EventData.string)) }

    var data: EventData { EventData([(.deviceId, .text(deviceId))]) }
}
