import AsyncHTTPClient
import AuthLedgerCore
import Foundation
import NIOCore
import NIOHTTP1

/// A client of a running `authledger serve` for services on other hosts: the queries,
/// commands, the challenge wait, the event feed and watches of the HTTP API (reference
/// section 5) as async calls, over AsyncHTTPClient. The queries answer the core's typed
/// values (`DeviceList`, `CoolingAnswer`, `PendingChallenge`, `ChallengeView`), commands and
/// watches the API's JSON documents (the core's `JSON`); refusals are
/// ``AuthLedgerClientError``s with the API's stable code and data. Streams reconnect by themselves with `Last-Event-ID`.
///
/// ```swift
/// let client = AuthLedgerClient(baseURL: "http://127.0.0.1:8080", token: token)
/// let devices = try await client.devices("alice")
/// for try await update in client.watch(devices: ["alice"]) { print(update.kind, update.position) }
/// ```
public struct AuthLedgerClient: Sendable {
    /// The server, e.g. `http://127.0.0.1:8080` (no trailing slash).
    public let baseURL: String
    let token: String?
    let http: HTTPClient
    /// How long one request may take (a challenge wait adds its own seconds).
    public var timeout: TimeAmount = .seconds(30)

    /// A client of the server at `baseURL` with bearer `token`, over `httpClient`.
    public init(baseURL: String, token: String?, httpClient: HTTPClient = .shared) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.token = token
        self.http = httpClient
    }

    // MARK: Queries (reference 3)

    /// `GET /v1/users/{u}/devices`.
    public func devices(_ user: String, current: String? = nil, includeRevoked: Bool = false) async throws -> DeviceList {
        try DeviceList(json: try await get("/v1/users/\(Self.segment(user))/devices",
                                           query: [("current", current), ("includeRevoked", includeRevoked ? "true" : nil)]))
    }

    /// `GET /v1/users/{u}/cooling`.
    public func cooling(_ user: String) async throws -> CoolingAnswer {
        try CoolingAnswer(json: try await get("/v1/users/\(Self.segment(user))/cooling"))
    }

    /// `GET /v1/users/{u}/pending`.
    public func pending(_ user: String) async throws -> [PendingChallenge] {
        try PendingChallenge.list(json: try await get("/v1/users/\(Self.segment(user))/pending"))
    }

    /// `GET /v1/users/{u}/challenges/{id}` (the requester's view with `asRequester`).
    public func challenge(_ id: String, of user: String, asRequester: Bool = false) async throws -> ChallengeView {
        try ChallengeView(json: try await get("/v1/users/\(Self.segment(user))/challenges/\(Self.segment(id))",
                                              query: [("view", asRequester ? "requester" : nil)]))
    }

    /// The requester's wait: the challenge once it is no longer pending, or after
    /// `seconds` (1–60) with it still pending (`?wait=`).
    public func awaitAnswer(user: String, challenge id: String, seconds: Int, asRequester: Bool = false) async throws -> ChallengeView {
        try ChallengeView(json: try await get("/v1/users/\(Self.segment(user))/challenges/\(Self.segment(id))",
                                              query: [("wait", String(seconds)), ("view", asRequester ? "requester" : nil)],
                                              extra: .seconds(Int64(seconds))))
    }

    // MARK: Commands (reference 5.2)

    /// Registers a device (`POST /v1/users/{u}/devices`); `fields` are the body's other members.
    public func register(_ user: String, deviceId: String, name: String, fields: [(String, JSON)] = []) async throws -> JSON {
        try await send(.POST, "/v1/users/\(Self.segment(user))/devices", .object([("deviceId", .string(deviceId)), ("name", .string(name))] + fields))
    }

    /// Revokes a device.
    public func revoke(_ user: String, deviceId: String) async throws -> JSON {
        try await send(.DELETE, "/v1/users/\(Self.segment(user))/devices/\(Self.segment(deviceId))", nil)
    }

    /// Issues a challenge from `requestingDeviceId`; the answer carries `challengeId`.
    public func issueChallenge(_ user: String, requestingDeviceId: String, action: String? = nil) async throws -> JSON {
        var m: [(String, JSON)] = [("requestingDeviceId", .string(requestingDeviceId))]
        if let action { m.append(("action", .string(action))) }
        return try await send(.POST, "/v1/users/\(Self.segment(user))/challenges", .object(m))
    }

    /// Approves challenge `id` from `deviceId`.
    public func approve(_ user: String, challenge id: String, deviceId: String) async throws -> JSON {
        try await send(.POST, "/v1/users/\(Self.segment(user))/challenges/\(Self.segment(id))/approve", .object([("deviceId", .string(deviceId))]))
    }

    /// Denies challenge `id` from `deviceId`.
    public func deny(_ user: String, challenge id: String, deviceId: String) async throws -> JSON {
        try await send(.POST, "/v1/users/\(Self.segment(user))/challenges/\(Self.segment(id))/deny", .object([("deviceId", .string(deviceId))]))
    }

    // MARK: Streams

    /// The event feed from `from` (inclusive; nil: live from the head), reconnecting with
    /// `Last-Event-ID` (no gap, no duplicate).
    public func events(from: UInt64? = nil, user: String? = nil, types: [String] = []) -> ServerSentEvents {
        let q = Self.query([("from", from.map(String.init)), ("user", user), ("types", types.isEmpty ? nil : types.joined(separator: ","))])
        return ServerSentEvents(client: self, path: "/v1/events" + q, lastEventID: nil)
    }

    /// Watches of several users' answers on one connection (`GET /v1/watch`): a snapshot
    /// per key, then each change; reconnects with `Last-Event-ID` (no repeated snapshot).
    /// `after`: resume after this position (a watch's last id).
    public func watch(devices: [String] = [], cooling: [String] = [], pending: [String] = [],
                      challenges: [(user: String, id: String)] = [], after: UInt64? = nil) -> ClientWatch {
        let q = Self.query([("devices", devices.isEmpty ? nil : devices.joined(separator: ",")),
                            ("cooling", cooling.isEmpty ? nil : cooling.joined(separator: ",")),
                            ("pending", pending.isEmpty ? nil : pending.joined(separator: ",")),
                            ("challenge", challenges.isEmpty ? nil : challenges.map { "\($0.user):\($0.id)" }.joined(separator: ","))])
        return ClientWatch(events: ServerSentEvents(client: self, path: "/v1/watch" + q, lastEventID: after))
    }

    // MARK: Requests

    func get(_ path: String, query: [(String, String?)] = [], extra: TimeAmount = .zero) async throws -> JSON {
        try await execute(.GET, path + Self.query(query), body: nil, timeout: timeout + extra)
    }

    func send(_ method: HTTPMethod, _ path: String, _ body: JSON?) async throws -> JSON {
        try await execute(method, path, body: body, timeout: timeout)
    }

    func request(_ method: HTTPMethod, _ path: String, body: JSON? = nil, headers: [(String, String)] = []) -> HTTPClientRequest {
        var r = HTTPClientRequest(url: baseURL + path)
        r.method = method
        if let token { r.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (k, v) in headers { r.headers.add(name: k, value: v) }
        if let body {
            r.headers.add(name: "Content-Type", value: "application/json")
            r.body = .bytes(ByteBuffer(string: body.serialized()))
        }
        return r
    }

    func execute(_ method: HTTPMethod, _ path: String, body: JSON?, timeout: TimeAmount) async throws -> JSON {
        let response = try await http.execute(request(method, path, body: body), timeout: timeout)
        let buffer = try await response.body.collect(upTo: 64 << 20)
        let text = String(buffer: buffer)
        guard (200..<300).contains(response.status.code) else {
            throw AuthLedgerClientError(status: Int(response.status.code), body: text)
        }
        if text.isEmpty { return .null }
        return try JSON.parse(text)
    }

    static func segment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? s
    }

    static func query(_ items: [(String, String?)]) -> String {
        let parts = items.compactMap { k, v in v.map { "\(k)=\(segment($0))" } }
        return parts.isEmpty ? "" : "?" + parts.joined(separator: "&")
    }
}

/// A refusal of the API: its HTTP status, stable code (`cooling_period_active`,
/// `challenge_not_found`, …) and the data that comes with it.
public struct AuthLedgerClientError: Error, Sendable, CustomStringConvertible {
    /// The HTTP status (400, 404, 409, 423, 429, …).
    public var status: Int
    /// The stable error code (`error` of the body).
    public var code: String
    /// The server's message.
    public var message: String
    /// When a cooling window ends (`cooling_period_active`).
    public var until: Timestamp?
    /// Attempts left (`otp_invalid`).
    public var remainingAttempts: Int?
    /// The parameter or member at fault (`invalid_event`).
    public var field: String?

    init(status: Int, body: String) {
        self.status = status
        let j = try? JSON.parse(body)
        code = j?["error"]?.stringValue ?? "http_\(status)"
        message = j?["message"]?.stringValue ?? String(body.prefix(200))
        until = j?["until"]?.stringValue.flatMap { Timestamp(rfc3339: $0) }
        remainingAttempts = j?["remainingAttempts"]?.intValue.map(Int.init)
        field = j?["field"]?.stringValue
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
