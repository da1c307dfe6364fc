import AuthLedger
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceLifecycle
import UnixSignals

/// The request context of the service: Hummingbird's core context plus the channel
/// (an event stream cuts off a subscriber that stopped reading by closing it).
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// What a route demands of its caller.
public enum Access: Sendable, Hashable {
    /// No token (`/health`).
    case open
    /// Any valid token (`/metrics`).
    case authenticated
    /// A token with this scope (or `admin`).
    case scope(Scope)
}

/// One route of the API, as registered with the router (OpenAPI path syntax).
public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    public let method: String
    public let path: String
    public let access: Access
    public var description: String { "\(method) \(path)" }
}

/// The AuthLedger HTTP service (SPEC section 5) over one `Ledger`.
///
/// Routes call the same command and query layer as the CLI; appends go through the
/// ledger's writer thread (`perform`, `submit`), never blocking an event loop.
public final class AuthLedgerServer: Sendable {
    public let ledger: Ledger
    public let configuration: ServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger

    public init(ledger: Ledger, configuration: ServerConfiguration, logger: Logger = Logger(label: "authledger.server")) throws {
        guard !configuration.tokens.isEmpty || configuration.insecureDev else {
            throw TokenConfigurationError("no tokens configured (AUTHLEDGER_TOKENS or --tokens FILE); refusing to start without --insecure-dev")
        }
        self.ledger = ledger
        self.configuration = configuration
        self.metrics = ServerMetrics()
        self.logger = logger
    }

    /// Bootstraps the process-wide `MetricsSystem` with this server's Prometheus
    /// registry, so library metrics (Hummingbird's request metrics) appear on
    /// `/metrics` too. Once per process: the CLI calls it, tests don't.
    public func bootstrapMetricsSystem() {
        MetricsSystem.bootstrap(metrics.factory)
    }

    /// Every route the router serves.
    public var endpoints: [Endpoint] { buildRouter().endpoints }

    /// The service as a `ServiceGroup`: the HTTP server and the challenge sweeper.
    /// `onListening` receives the bound port (useful with port 0).
    public func serviceGroup(gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint],
                             onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> ServiceGroup {
        let table = buildRouter()
        var services: [any Service] = []
        if let interval = configuration.sweepInterval {
            services.append(ChallengeSweeper(ledger: ledger, interval: interval, pollInterval: configuration.pollInterval,
                                             clock: configuration.clock, metrics: metrics, logger: logger))
        }
        let app = Application(
            router: table.router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            services: services,
            onServerRunning: { [logger, configuration] channel in
                let port = channel.localAddress?.port ?? configuration.port
                logger.info("listening", metadata: ["host": "\(configuration.host)", "port": "\(port)"])
                await onListening(port)
            },
            logger: logger
        )
        return ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: gracefulShutdownSignals, logger: logger))
    }

    /// Runs until SIGTERM or SIGINT, then shuts down gracefully: no new connections,
    /// in-flight requests (appends included) finish, event streams end.
    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await serviceGroup(onListening: onListening).run()
    }

    // MARK: Routing

    final class RouteTable: @unchecked Sendable {
        let router = Router(context: ServerRequestContext.self)
        var endpoints: [Endpoint] = []
    }

    func buildRouter() -> RouteTable {
        let table = RouteTable()
        table.router.add(middleware: JSONNotFoundMiddleware())
        table.router.add(middleware: LogRequestsMiddleware(.debug))
        table.router.add(middleware: MetricsMiddleware())
        registerRoutes(table)
        return table
    }

    typealias Handler = @Sendable (Request, ServerRequestContext) async throws -> Response

    /// Registers `handler` for `method` on `path` (OpenAPI syntax, `{user}`), behind
    /// the access check, with every error answered as SPEC 5 says.
    func on(_ table: RouteTable, _ method: HTTPRequest.Method, _ path: String, _ access: Access, _ handler: @escaping Handler) {
        table.endpoints.append(Endpoint(method: method.rawValue, path: path, access: access))
        let routerPath = path.split(separator: "/").map { c in
            c.hasPrefix("{") && c.hasSuffix("}") ? ":" + c.dropFirst().dropLast() : String(c)
        }.joined(separator: "/")
        table.router.on(RouterPath("/" + routerPath), method: method) { [self] request, context in
            do {
                try authorize(request, access)
                return try await handler(request, context)
            } catch let e as LedgerError {
                metrics.refused(e.code)
                if e.code == .storageError {
                    context.logger.error("storage error", metadata: ["message": "\(e.message)"])
                } else {
                    context.logger.debug("refused", metadata: ["code": "\(e.code.rawValue)"])
                }
                return APIError.response(e)
            } catch let e as TokenConfigurationError {
                return APIError.response(LedgerError.invalid(e.description))
            } catch {
                context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
                metrics.refused(.storageError)
                return APIError.response(LedgerError(.storageError, "internal error"))
            }
        }
    }

    func authorize(_ request: Request, _ access: Access) throws(LedgerError) {
        if access == .open { return }
        if configuration.tokens.isEmpty && configuration.insecureDev { return }
        guard let header = request.headers[.authorization] else {
            throw LedgerError(.unauthorized, "a bearer token is required (Authorization: Bearer <token>)")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw LedgerError(.unauthorized, "a bearer token is required (Authorization: Bearer <token>)")
        }
        guard let scopes = configuration.tokens.scopes(of: parts[1].trimmingWhitespace()) else {
            throw LedgerError(.unauthorized, "unknown token")
        }
        if case let .scope(s) = access, !scopes.contains(s) {
            throw LedgerError(.forbidden, "this token lacks the \(s.rawValue) scope")
        }
    }
}

/// Answers requests for unknown routes in the API's error form.
struct JSONNotFoundMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as HTTPError where e.status == .notFound {
            return APIError.response(LedgerError(.notFound, "no route \(request.method.rawValue) \(request.uri.path)"))
        } catch let e as HTTPError where e.status == .methodNotAllowed {
            var r = APIError.response(LedgerError(.notFound, "no route \(request.method.rawValue) \(request.uri.path)"))
            r.status = .methodNotAllowed
            return r
        }
    }
}
