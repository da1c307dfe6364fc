import AuthLedger
import HTTPTypes
import Hummingbird
import NIOCore

/// What a route demands of its caller.
public enum RouteAccess: Sendable, Hashable {
    /// No token (`/health`).
    case open
    /// Any valid token (`/metrics`).
    case authenticated
    /// A token with this scope (or `admin`).
    case scope(Scope)
}

/// One route of the API, as registered with the router (OpenAPI path syntax).
public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    /// The HTTP method (`GET`, `POST`, …).
    public let method: String
    /// The path in OpenAPI syntax (`/v1/users/{user}/devices`).
    public let path: String
    /// What the route demands of its caller.
    public let access: RouteAccess
    /// `METHOD path`.
    public var description: String { "\(method) \(path)" }
    /// The path as the router matches it (``path``, but `**` for the rest of the path).
    let routerPath: String
}

/// One family of routes (operations, users, the log, tiles, …): a Hummingbird
/// `RouteCollection` whose every route runs inside the error mapping
/// (``APIErrorMiddleware``) and the access check of what it demands (``AccessMiddleware``),
/// each listed as an ``Endpoint``.
final class RouteFamily {
    let routes = RouteCollection(context: ServerRequestContext.self)
    private(set) var endpoints: [Endpoint] = []
    private let server: LedgerServer

    init(_ server: LedgerServer) { self.server = server }

    /// Registers `handler` for `method` on `path` (`{name}` one segment, `**` the rest of the
    /// path, then named `documented` in the OpenAPI document) behind `access`.
    func on(_ method: HTTPRequest.Method, _ path: RouterPath, _ access: RouteAccess, documented: String? = nil,
            _ handler: @escaping @Sendable (Request, ServerRequestContext) async throws -> Response) {
        endpoints.append(Endpoint(method: method.rawValue, path: documented ?? path.description, access: access, routerPath: path.description))
        routes.group()
            .add(middleware: APIErrorMiddleware(server: server))
            .add(middleware: AccessMiddleware(server: server, access: access))
            .on(path, method: method, use: handler)
    }
}

/// The server's routes: Hummingbird's router holding every family, and their endpoints
/// in the order they were registered.
package struct ServerRoutes {
    package let router: Router<ServerRequestContext>
    package let endpoints: [Endpoint]
}

extension LedgerServer {
    /// Every route the router serves.
    public var endpoints: [Endpoint] { buildRouter().endpoints }

    /// Every family's `RouteCollection` added to one Hummingbird router, behind the answers for
    /// unrouted requests, the request log and the metrics (a new family goes in `register`).
    package func buildRouter() -> ServerRoutes {
        let register: [(RouteFamily) -> Void] = [
            registerOperationRoutes, registerUserRoutes, registerLogRoutes, registerSubscriptionRoutes, registerWatchRoutes,
            registerErasureRoutes, registerProofRoutes, registerSharedSignalsRoutes, registerVerifiableLogRoutes, registerConsoleRoutes,
            registerUserProofRoutes,
        ]
        let families = register.map { r in
            let f = RouteFamily(self)
            r(f)
            return f
        }
        let endpoints = families.flatMap(\.endpoints)
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: UnroutedMiddleware(endpoints))
        // Requests are logged at `requestLogLevel` (debug unless configured): below it the
        // middleware runs only for the access log.
        let logsRequests = logger.logLevel <= configuration.requestLogLevel
        if logsRequests || accessLog != nil {
            router.add(middleware: RequestLogMiddleware(level: logsRequests ? configuration.requestLogLevel : nil, accessLog: accessLog))
        }
        router.add(middleware: MetricsMiddleware())
        for f in families { router.addRoutes(f.routes) }
        return ServerRoutes(router: router, endpoints: endpoints)
    }
}

/// Answers requests the router has no route for in the API's error form: 404, or 405 with
/// `Allow` when the path has routes under other methods. A path's methods are asked of a
/// second Hummingbird router with one GET route per path, answering that path's `Allow`:
/// paths match there as they do in the API's router.
struct UnroutedMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let methods: RouterResponder<Context>

    init(_ endpoints: [Endpoint]) {
        var paths: [String] = [], allowed: [String: [String]] = [:]
        for e in endpoints {
            if allowed[e.routerPath] == nil { paths.append(e.routerPath) }
            allowed[e.routerPath, default: []].append(e.method)
        }
        let index = Router(context: Context.self)
        for path in paths {
            let allow = allowed[path, default: []].joined(separator: ", ")
            index.get(RouterPath(path)) { _, _ in Response(status: .methodNotAllowed, headers: [.allow: allow]) }
        }
        methods = index.buildResponder()
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as HTTPError where e.status == .notFound || e.status == .methodNotAllowed {
            let path = request.uri.path
            // A context of its own: the lookup must not rename the request's endpoint (metrics, log).
            let probe = Request(head: HTTPRequest(method: .get, scheme: nil, authority: nil, path: path), body: .init(buffer: ByteBuffer()))
            let found = try await methods.respond(to: probe, context: Context(source: .init(channel: context.channel, logger: context.logger)))
            guard let allow = found.headers[.allow] else {
                return APIError.response(LedgerError(.notFound, "no route \(request.method.rawValue) \(path)"))
            }
            var r = APIError.response(LedgerError(.notFound, "\(request.method.rawValue) is not allowed on \(path)"))
            r.status = .methodNotAllowed
            r.headers[.allow] = allow
            return r
        }
    }
}
