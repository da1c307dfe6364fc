/// `device.renamed`.
public struct DeviceRenamed: Equatable, Sendable {
    public var deviceId: String
    /// The new name; nil once erased.
    public var name: String?

    public init(deviceId: String, name: String?) {
        self.deviceId = deviceId
        self.name = name
    }

    init(_ d: EventData) throws(LedgerError) {
        try self.init(deviceId: d.need(.deviceId, .renamed, EventData.string), name: d.string(.name))
    }

    var data: EventData { EventData([(.deviceId, .text(deviceId)), (.name, .text(name))]) }
}
