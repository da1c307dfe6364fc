import AuthLedgerCore
import OpenAPIRuntime

/// One answer of a watch (reference section 13): the answer at `position`, first as a
/// snapshot, then each different answer as it changes. Answers are levels, not edges: each
/// is exact at its position (and the server's clock); a slow watcher may skip intermediate
/// answers, never the latest, and positions never go back.
public struct WatchUpdate<Answer: Sendable>: Sendable {
    /// The first answer of a watch, or one that changed since the last one delivered.
    public enum Kind: String, Sendable { case snapshot, changed }
    /// `snapshot` (the first answer of a watch that did not resume) or `changed`.
    public var kind: Kind
    /// The log position the answer reflects.
    public var position: UInt64
    /// The answer.
    public var answer: Answer
}

/// What one key of a multi-key watch (`GET /v1/watch`) answered.
public enum WatchedAnswer: Sendable {
    /// A `devices` answer.
    case devices(DeviceList)
    /// A `cooling` answer.
    case cooling(CoolingAnswer)
    /// A `pending` answer, with its user (the answer is a bare list).
    case pending(user: String, [PendingChallenge])
    /// A `challenge` answer, with its user.
    case challenge(user: String, ChallengeView)

    /// The user the answer is about.
    public var user: String {
        switch self {
        case let .devices(d): d.user
        case let .cooling(c): c.user
        case let .pending(u, _), let .challenge(u, _): u
        }
    }
}

/// A key of a multi-key watch.
public enum WatchKey: Sendable, Hashable {
    /// The user's devices.
    case devices(user: String)
    /// The user's cooling window.
    case cooling(user: String)
    /// The user's pending challenges.
    case pending(user: String)
    /// One challenge of the user's.
    case challenge(user: String, id: String)
}

extension AuthLedgerClient {
    /// Watches the user's devices (`GET /v1/users/{u}/devices?watch=true`): the answer now, then
    /// each change. `from` resumes after a position a former watch delivered (no snapshot: a
    /// `changed` only when the answer differs from the one at `from`). Reconnects by itself.
    public func watchDevices(of user: String, current: String? = nil, includeRevoked: Bool = false,
                             from: UInt64? = nil) -> AsyncThrowingStream<WatchUpdate<DeviceList>, any Error> {
        watch(Self.userPath(user, "/devices"), [("current", current), ("includeRevoked", includeRevoked ? "true" : nil)], from: from, DeviceList.init(json:))
    }

    /// Watches the user's cooling window (`GET /v1/users/{u}/cooling?watch=true`).
    public func watchCooling(of user: String, from: UInt64? = nil) -> AsyncThrowingStream<WatchUpdate<CoolingAnswer>, any Error> {
        watch(Self.userPath(user, "/cooling"), [], from: from, CoolingAnswer.init(json:))
    }

    /// Watches the user's pending challenges (`GET /v1/users/{u}/pending?watch=true`).
    public func watchPending(of user: String, from: UInt64? = nil) -> AsyncThrowingStream<WatchUpdate<[PendingChallenge]>, any Error> {
        watch(Self.userPath(user, "/pending"), [], from: from, PendingChallenge.list(json:))
    }

    /// Watches one challenge (`GET /v1/users/{u}/challenges/{id}?watch=true`).
    public func watchChallenge(_ id: String, of user: String, view: ChallengeViewer? = nil,
                               from: UInt64? = nil) -> AsyncThrowingStream<WatchUpdate<ChallengeView>, any Error> {
        watch(Self.userPath(user, "/challenges/" + Self.escaped(id)), [("view", view?.rawValue)], from: from, ChallengeView.init(json:))
    }

    /// Watches up to 1,000 keys on one connection (`GET /v1/watch`): one snapshot per key, then
    /// each key's changes, resumed together. A user key that contains a comma cannot be listed
    /// here: watch it on its own route.
    public func watch(_ keys: [WatchKey], from: UInt64? = nil) throws(AuthLedgerClientError) -> AsyncThrowingStream<WatchUpdate<WatchedAnswer>, any Error> {
        var lists: [String: [String]] = [:]
        for key in keys {
            let (name, value): (String, String) = switch key {
            case let .devices(u): ("devices", u)
            case let .cooling(u): ("cooling", u)
            case let .pending(u): ("pending", u)
            case let .challenge(u, id): ("challenge", u + ":" + id)
            }
            if value.contains(",") { throw .unsupported("the key \(value) holds a comma: watch it on its own route") }
            lists[name, default: []].append(value)
        }
        let query = ["devices", "pending", "cooling", "challenge"].compactMap { name in
            lists[name].map { (name, Optional($0.joined(separator: ","))) }
        }
        return watchStream("/v1/watch", query, from: from) { json throws(LedgerError) -> WatchedAnswer in
            guard let projection = json["projection"]?.stringValue, let user = json["user"]?.stringValue, let answer = json["answer"] else {
                throw .invalid("a watch's data is not {projection, user, answer}", field: "data")
            }
            switch projection {
            case "devices": return .devices(try DeviceList(json: answer))
            case "cooling": return .cooling(try CoolingAnswer(json: answer))
            case "pending": return .pending(user: user, try PendingChallenge.list(json: answer))
            case "challenge": return .challenge(user: user, try ChallengeView(json: answer))
            default: throw .invalid("unknown projection \(projection)", field: "projection")
            }
        }
    }

    func watch<Answer: Sendable>(_ path: String, _ query: [(String, String?)], from: UInt64?,
                                 _ decode: @escaping @Sendable (JSON) throws(LedgerError) -> Answer) -> AsyncThrowingStream<WatchUpdate<Answer>, any Error> {
        watchStream(path, [("watch", "true")] + query, from: from, decode)
    }

    /// The updates of a watch stream: `snapshot` and `changed` delivered, `progress` only moving
    /// the position a reconnection resumes from; nothing older than what was delivered.
    func watchStream<Answer: Sendable>(_ path: String, _ query: [(String, String?)], from: UInt64?,
                                       _ decode: @escaping @Sendable (JSON) throws(LedgerError) -> Answer) -> AsyncThrowingStream<WatchUpdate<Answer>, any Error> {
        resumingStream(path: path, query: query, lastEventID: from.map(String.init), state: from ?? 0) { event, last in
            guard let name = event.event, let kind = WatchUpdate<Answer>.Kind(rawValue: name) else { return [] }
            guard let id = event.id, let position = UInt64(id) else {
                throw AuthLedgerClientError.invalidAnswer("a watch's \(name) has no position id")
            }
            guard position >= last else { return [] }
            last = position
            let json: JSON
            do { json = try JSON.parse(event.data ?? "") } catch { throw AuthLedgerClientError.invalidAnswer("a watch's data is not JSON") }
            return [WatchUpdate(kind: kind, position: position, answer: try Self.decode(json, decode))]
        }
    }
}
