/// Options every query takes (SPEC 3): a position, an as-of time, and view flags.
public struct QueryOptions: Sendable {
    /// Replay events with `seq <= position` (nil: the head; beyond the head means the head).
    public var position: UInt64?
    /// Replay events with `at <= asOf` and evaluate expiry and cooling at this time.
    public var asOf: Timestamp
    /// The device the caller names as its own (`current: true`).
    public var current: String?
    /// List revoked devices too (`devices` only; they are left out by default).
    public var includeRevoked: Bool
    /// The requester's view of a challenge: status only.
    public var asRequester: Bool
    /// Compute by replaying from scratch instead of from maintained projections.
    public var fromScratch: Bool

    /// Options for a query as of `asOf`, at the head by default, with every view flag off.
    public init(position: UInt64? = nil, asOf: Timestamp, current: String? = nil, includeRevoked: Bool = false,
                asRequester: Bool = false, fromScratch: Bool = false) {
        self.position = position
        self.asOf = asOf
        self.current = current
        self.includeRevoked = includeRevoked
        self.asRequester = asRequester
        self.fromScratch = fromScratch
    }
}
