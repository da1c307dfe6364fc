/// A page of the users the log holds (reference section 3.6): those whose key starts with
/// `prefix`, in the order of their keys' UTF-8 bytes, from the first one after `after`.
public struct UserPage: Sendable, Equatable {
    /// Only users whose key starts with this (by UTF-8 bytes; "" for all).
    public var prefix: String
    /// Only users whose key comes after this one (nil, or "" when given: from the first).
    public var after: String?
    /// At most this many users.
    public var limit: Int

    /// The page size when a request names none.
    public static let defaultLimit = 50
    /// The largest page a request may ask for.
    public static let maxLimit = 1_000

    /// The page of `limit` users starting with `prefix` after `after`; `invalid_event`
    /// naming the parameter (`prefix`, `after`, `limit`) when one is out of range.
    public init(prefix: String = "", after: String? = nil, limit: Int = UserPage.defaultLimit) throws(LedgerError) {
        guard prefix.utf8.count <= 512, prefix.count <= 128, !EventDecoder.hasControl(prefix) else {
            throw .invalid("prefix must be at most 128 characters, none a control character", field: "prefix")
        }
        if let after, !after.isEmpty {
            guard after.utf8.count <= 512, after.count <= 128, !EventDecoder.hasControl(after) else {
                throw .invalid("after must be a user key (at most 128 characters, no control character)", field: "after")
            }
        }
        guard (1...Self.maxLimit).contains(limit) else {
            throw .invalid("limit must be an integer from 1 to \(Self.maxLimit)", field: "limit")
        }
        self.prefix = prefix
        self.after = after?.isEmpty == true ? nil : after
        self.limit = limit
    }

    /// Where the page's walk of the keys starts: `prefix`, or `after` when that comes later
    /// (``includes(_:)`` then leaves `after` itself out).
    public var start: String {
        guard let after, !Array(after.utf8).lexicographicallyPrecedes(Array(prefix.utf8)) else { return prefix }
        return after
    }

    /// Whether `key` is in the page's range: it starts with `prefix` (by bytes); the walk
    /// from ``start`` ends at the first key that does not.
    public func matches(_ key: String) -> Bool { key.utf8.starts(with: prefix.utf8) }

    /// Whether the page may hold `key`, a key of its range: not `after` itself.
    public func includes(_ key: String) -> Bool { key != after }
}

/// One user of a ``UserList``: how many events the user's stream holds and the latest one.
public struct UserSummary: Sendable, Equatable {
    /// The user key.
    public var user: String
    /// The number of events of the user's stream (the latest version).
    public var events: UInt64
    /// The `seq` of the user's latest event.
    public var lastSeq: UInt64
    /// The `at` of the user's latest event.
    public var lastAt: Timestamp?

    /// `user` with `events` events, the latest at `lastSeq` and `lastAt`.
    public init(user: String, events: UInt64, lastSeq: UInt64, lastAt: Timestamp?) {
        self.user = user
        self.events = events
        self.lastSeq = lastSeq
        self.lastAt = lastAt
    }

    /// `{"user", "events", "lastSeq", "lastAt"}`.
    public var json: JSON {
        .object([("user", .string(user)), ("events", .int(Int64(events))), ("lastSeq", .int(Int64(lastSeq))),
                 ("lastAt", lastAt.map { .string($0.formatted) } ?? .null)])
    }
}

/// The `users` answer: a page of users at the head, and the `after` of the next page.
public struct UserList: Sendable, Equatable {
    /// The log position the answer reflects (the head).
    public var position: UInt64
    /// The users of the page, by key.
    public var users: [UserSummary]
    /// The key to pass as `after` for the next page; nil when this page is the last.
    public var next: String?

    /// The page `users` read at `position`, `next` the `after` of the page after it.
    public init(position: UInt64, users: [UserSummary], next: String?) {
        self.position = position
        self.users = users
        self.next = next
    }

    /// `{"position", "users": […], "next"}`.
    public var json: JSON {
        .object([("position", .int(Int64(position))), ("users", .array(users.map(\.json))), ("next", next.map(JSON.string) ?? .null)])
    }
}
