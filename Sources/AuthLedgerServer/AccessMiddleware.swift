import AuthLedger
import Hummingbird

/// The access check of a group of routes: refuses an address with too many failed
/// authentications (429), checks the bearer token against the group's ``RouteAccess`` (401,
/// 403), records who the caller is and its scopes in the context, and applies the
/// per-token request rate (429). Open routes skip all of it.
struct AccessMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: LedgerServer
    let access: RouteAccess

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if access != .open, let authFailures = server.authFailures, let wait = authFailures.blocked(context.remoteAddress) {
            server.metrics.refused(HTTPRefusal.Code.rateLimited.rawValue)
            var response = APIError.response(HTTPRefusal(.rateLimited,
                "too many failed authentications from this address; retry after \(wait) s"))
            response.headers[.retryAfter] = "\(wait)"
            return response
        }
        let who = try await server.identify(request, context, access)
        context.caller = who?.caller
        context.scopes = who?.scopes ?? []
        context.callerName.name = who?.caller.logName
        if let caller = context.caller, let buckets = server.buckets, let wait = buckets.take(caller) {
            server.metrics.refused(HTTPRefusal.Code.rateLimited.rawValue)
            context.logger.debug("refused", metadata: ["code": "\(HTTPRefusal.Code.rateLimited.rawValue)"])
            var response = APIError.response(HTTPRefusal(.rateLimited,
                "too many requests for this token (\(buckets.limit.perSecond.formattedRate)/s, bursts of \(buckets.limit.burst)); retry after \(wait) s"))
            response.headers[.retryAfter] = "\(wait)"
            return response
        }
        // The appends of the handler record who called (`meta.caller`).
        return try await Caller.$current.withValue(context.caller) { try await next(request, context) }
    }
}
