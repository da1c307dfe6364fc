import AuthLedgerCore
import NIOCore

/// Where and when a query looks (reference section 3): at a log position, at a time, both,
/// or (the default) at the head and the server's clock.
public struct QueryPoint: Sendable, Equatable {
    /// The log position to answer at (nil: the head).
    public var position: UInt64?
    /// The time to evaluate at (nil: the server's clock).
    public var asOf: Timestamp?
    /// At `position` (nil: the head) and `asOf` (nil: now).
    public init(position: UInt64? = nil, asOf: Timestamp? = nil) {
        self.position = position
        self.asOf = asOf
    }
    /// The head, now.
    public static let now = QueryPoint()

    var query: [(String, String?)] { [("at", position.map(String.init)), ("asOf", asOf?.formatted)] }
}

/// Whose view of a challenge to ask for (reference section 3.4).
public enum ChallengeViewer: String, Sendable {
    /// The device that asked: `status` only (a denial and an expiry look the same).
    case requester
    /// The user's own devices: `status` and `outcome`.
    case owner
    /// An auditor: `status` and `outcome`.
    case auditor
}

/// One page of a user's history (`GET /v1/users/{u}/history`).
public struct HistoryPageAnswer: Sendable, Equatable {
    /// The events of the page, in `seq` order.
    public var events: [RecordedEvent]
    /// The `after` of the next page; nil when this page was the last.
    public var nextAfter: UInt64?
}

/// The head of the log: its last position and that event's chain hash.
public struct LogHead: Sendable, Equatable {
    /// The last position.
    public var seq: UInt64
    /// The chain hash of the event there, hex.
    public var hash: String
}

extension AuthLedgerClient {
    /// The user's devices and cooling window (`GET /v1/users/{u}/devices`).
    public func devices(of user: String, at point: QueryPoint = .now, current: String? = nil,
                        includeRevoked: Bool = false) async throws(AuthLedgerClientError) -> DeviceList {
        let q = point.query + [("current", current), ("includeRevoked", includeRevoked ? "true" : nil)]
        return try Self.decode(try await send(.GET, Self.userPath(user, "/devices"), query: q).json(), DeviceList.init(json:))
    }

    /// Whether a cooling window is open (`GET /v1/users/{u}/cooling`).
    public func cooling(of user: String, at point: QueryPoint = .now) async throws(AuthLedgerClientError) -> CoolingAnswer {
        try Self.decode(try await send(.GET, Self.userPath(user, "/cooling"), query: point.query).json(), CoolingAnswer.init(json:))
    }

    /// The challenges pending at the time asked, by issue time (`GET /v1/users/{u}/pending`).
    public func pending(of user: String, at point: QueryPoint = .now) async throws(AuthLedgerClientError) -> [PendingChallenge] {
        try Self.decode(try await send(.GET, Self.userPath(user, "/pending"), query: point.query).json(), PendingChallenge.list(json:))
    }

    /// What a challenge came to (`GET /v1/users/{u}/challenges/{id}`).
    public func challenge(_ id: String, of user: String, view: ChallengeViewer? = nil,
                          at point: QueryPoint = .now) async throws(AuthLedgerClientError) -> ChallengeView {
        let q = point.query + [("view", view?.rawValue)]
        let path = Self.userPath(user, "/challenges/" + Self.escaped(id))
        return try Self.decode(try await send(.GET, path, query: q).json(), ChallengeView.init(json:))
    }

    /// The requester's wait (reference section 13): answers as soon as the challenge is no
    /// longer pending, or after `timeout` (1–60 s, whole seconds) with it still pending.
    /// A longer wait is several calls: each answers within the server's bound.
    public func awaitAnswer(user: String, challenge id: String, timeout: Duration = .seconds(60),
                            view: ChallengeViewer = .requester) async throws(AuthLedgerClientError) -> ChallengeView {
        let seconds = max(1, min(60, Int(timeout.components.seconds)))
        let path = Self.userPath(user, "/challenges/" + Self.escaped(id))
        let q: [(String, String?)] = [("wait", String(seconds)), ("view", view.rawValue)]
        let answer = try await send(.GET, path, query: q, timeout: .seconds(Int64(seconds) + 30))
        return try Self.decode(try answer.json(), ChallengeView.init(json:))
    }

    /// One page of the user's events (`GET /v1/users/{u}/history`): at most `limit` events
    /// after `after`; the next page starts after the last one (``HistoryPageAnswer/nextAfter``).
    public func history(of user: String, after: UInt64 = 0, limit: Int? = nil,
                        at point: QueryPoint = .now) async throws(AuthLedgerClientError) -> HistoryPageAnswer {
        let q = point.query + [("after", after > 0 ? String(after) : nil), ("limit", limit.map(String.init))]
        let answer = try await send(.GET, Self.userPath(user, "/history"), query: q)
        guard let items = try answer.json().arrayValue else { throw .invalidAnswer("a history page is not an array") }
        var events: [RecordedEvent] = []
        for item in items { events.append(try Self.decode(item, RecordedEvent.init(json:))) }
        // A full page names the next one in its Link header; a shorter page is the last.
        let next = answer.headers.first(name: "Link").flatMap { _ in events.last?.seq }
        return HistoryPageAnswer(events: events, nextAfter: next)
    }

    /// The recorded events, in `seq` order (`GET /v1/export`, audit scope): everyone's, or one
    /// user's, from `from`.
    public func export(user: String? = nil, from: UInt64? = nil) async throws(AuthLedgerClientError) -> [RecordedEvent] {
        let answer = try await send(.GET, "/v1/export", query: [("user", user), ("from", from.map(String.init))], timeout: .minutes(10), maxBytes: 1 << 31)
        var events: [RecordedEvent] = []
        for line in answer.body.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            let json: JSON
            do { json = try JSON.parse(line) } catch { throw .invalidAnswer("an export line is not JSON") }
            events.append(try Self.decode(json, RecordedEvent.init(json:)))
        }
        return events
    }

    /// Re-computes every hash and index on the server (`GET /v1/verify`, audit scope); a
    /// tampered log is refused with `tampered` and the first bad `seq`.
    public func verify() async throws(AuthLedgerClientError) -> LogHead {
        let json = try await send(.GET, "/v1/verify", timeout: .minutes(30)).json()
        guard let seq = json["head"]?["seq"]?.intValue, let hash = json["head"]?["hash"]?.stringValue else {
            throw .invalidAnswer("a verification's answer has no head")
        }
        return LogHead(seq: UInt64(seq), hash: hash)
    }
}
