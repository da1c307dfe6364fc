/// `user.erased`: the user's personal values were erased (SPEC 1.5).
public struct UserErased: Equatable, Sendable {
    public var reason: String?

    public init(reason: String? = nil) { self.reason = reason }

    init(_ d: EventData) { self.init(reason: d.string(.reason)) }

    var data: EventData { EventData([(.reason, .text(reason))]) }
}
