import AuthLedger
import Foundation
import Hummingbird
import Logging
import Synchronization

/// Who made a request, for the logs: set by the access check, read by the request log once
/// the response is made (a reference, so that the outer middleware sees what the inner one set).
final class CallerName: Sendable {
    private let value = Mutex<String?>(nil)
    var name: String? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

extension Caller {
    /// The caller's name in the logs and the access log — never the token, nor a digest of it:
    /// `service:<client_id|azp|sub>` for a JWT, `token:<NAME>` for a static token, `cert:<SAN>`
    /// for mTLS, as `meta.caller` records it; `anonymous` without credentials (`--insecure-dev`).
    var logName: String { name ?? (self == .anonymous ? "anonymous" : "token") }
}

/// One line per request at the configured level (`requestId`, `method`, `route`,
/// `status`, `durationMs`, `caller`), and one line per request that reads a user's data to
/// the access log (``AccessLog``). Placed inside the not-found mapping, so refusals,
/// errors and unknown routes are logged with the status the client got.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let level: Logger.Level?
    let accessLog: AccessLog?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let status: Int
        let response: Response
        do {
            response = try await next(request, context)
            status = Int(response.status.code)
        } catch {
            log(request, context, status: (error as? any HTTPResponseError).map { Int($0.status.code) } ?? 500, since: start)
            throw error
        }
        log(request, context, status: status, since: start)
        return response
    }

    func log(_ request: Request, _ context: Context, status: Int, since start: ContinuousClock.Instant) {
        let route = Self.route(context.endpointPath)
        // Hummingbird's request id (`context.id` would trap on a context made without one).
        let requestId = context.logger[metadataKey: "hb.request.id"]?.description ?? "-"
        let caller = context.callerName.name
        if let level {
            let d = ContinuousClock.now - start
            let ms = Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
            var metadata: Logger.Metadata = [
                "requestId": .string(requestId), "method": .string(request.method.rawValue), "route": .string(route),
                "status": .stringConvertible(status), "durationMs": .stringConvertible(ms),
            ]
            if let caller { metadata["caller"] = .string(caller) }
            context.logger.log(level: level, "request", metadata: metadata)
        }
        if let accessLog, AccessLog.readsUserData(method: request.method.rawValue, route: route) {
            let user = context.parameters.get("user").flatMap(percentDecoded) ?? request.uri.queryParameters.get("user")
            accessLog.record(user: user, caller: caller, method: request.method.rawValue, route: route, status: status, requestId: requestId)
        }
    }

    /// Hummingbird's route path (`/v1/users/:user/devices`) in the API's form (`/v1/users/{user}/devices`).
    static func route(_ path: String?) -> String {
        guard let path else { return "unknown" }
        return path.split(separator: "/", omittingEmptySubsequences: false).map { c in
            c.hasPrefix(":") ? "{\(c.dropFirst())}" : c == "**" ? "{tilePath+}" : String(c)
        }.joined(separator: "/")
    }
}

/// `serve --access-log FILE`: who read whose data. One JSON line per request that reads a
/// user's data — `time`, `user` (the user key; null for a request over every user),
/// `caller`, `method`, `route`, `status`, `requestId` — appended to the file (created
/// 0600). It never holds a token, a query string or a personal value.
public final class AccessLog: Sendable {
    private let fd: Int32

    /// Opens (creating 0600) `path` for appending; throws when it cannot be.
    public init(path: String) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ServerConfigurationError("cannot open the access log \(path): \(String(cString: strerror(errno)))") }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Whether a request of `method` on `route` reads a user's data: the queries and
    /// histories of a user, the event feed and subscription streams, exports and proofs,
    /// and any later read under `/v1/users/{user}` (watches).
    static func readsUserData(method: String, route: String) -> Bool {
        guard method == "GET" else { return false }
        return route.hasPrefix("/v1/users/{user}") || route == "/v1/users" || route == "/v1/export" || route == "/v1/events"
            || route == "/v1/subscriptions/{name}/events" || route.hasPrefix("/v1/proofs/")
    }

    func record(user: String?, caller: String?, method: String, route: String, status: Int, requestId: String) {
        let line = JSON.object([
            ("time", .string(Timestamp.now().formatted)), ("user", .optional(user)), ("caller", .optional(caller)),
            ("method", .string(method)), ("route", .string(route)), ("status", .int(Int64(status))), ("requestId", .string(requestId)),
        ]).serialized() + "\n"
        // One write of the whole line: appends (O_APPEND) of concurrent requests never interleave.
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { b in write(fd, b.baseAddress, b.count) }
    }
}
