/// `device.renamed`.
public struct DeviceRenamed: Equatable, Sendable {
    /// The device's id.
    public var deviceId: String
    /// The new name; nil once erased.
    public var name: String?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(deviceId: String, name: String?) {
        self.deviceId = deviceId
        self.name = name
    }

    init(_ d: EventData) throws(LedgerError) {
        try self.init(deviceId: d.need(.deviceId, .renamed, EventData.string), name: d.string(.name))
    }

    var data: EventData { EventData([(.deviceId, .text(deviceId)), (.name, .text(name))]) }
}
