/// `device.all_revoked`: every pending and active device of the user was revoked.
public struct AllDevicesRevoked: Equatable, Sendable {
    /// Why, in the caller's words (free text), if given.
    public var reason: String?

    /// A payload with these fields; nothing is checked until it is appended.
    public init(reason: String? = nil) { self.reason = reason }

    init(_ d: EventData) { self.init(reason: d.string(.reason)) }

    var data: EventData { EventData([(.reason, .text(reason))]) }
}
