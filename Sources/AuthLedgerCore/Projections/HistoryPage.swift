/// Paging of `history(user)` (SPEC 3): the events after a `seq`, at most `limit` of them.
public struct HistoryPage: Sendable, Equatable {
    /// Only events with a `seq` greater than this (0: from the stream's first event).
    public var after: UInt64
    /// At most this many events (nil: all).
    public var limit: Int?

    /// A page of the events after `seq` `after`, at most `limit` of them (default: from the start, all).
    public init(after: UInt64 = 0, limit: Int? = nil) {
        self.after = after
        self.limit = limit
    }

    /// The page size of the HTTP service when a request names none, and the largest it accepts.
    public static let defaultLimit = 1_000
    /// The largest page the HTTP service accepts.
    public static let maxLimit = 10_000
}
