/// `device.all_revoked`: every pending and active device of the user was revoked.
public struct AllDevicesRevoked: Equatable, Sendable {
    public var reason: String?

    public init(reason: String? = nil) { self.reason = reason }

    init(_ d: EventData) { self.init(reason: d.string(.reason)) }

    var data: EventData { EventData([(.reason, .text(reason))]) }
}
