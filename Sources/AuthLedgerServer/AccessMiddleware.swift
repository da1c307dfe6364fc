import AuthLedger
import Hummingbird

/// The access check of a route: refuses an address with too many failed
/// authentications (429), checks the bearer token against the route's ``RouteAccess`` (401,
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
        if access != .open {
            let who = try await server.identify(request, context)
            if case let .scope(s) = access { try server.demand(s, of: who.scopes) }
            context.caller = who.caller
            context.scopes = who.scopes
            context.callerName.name = who.caller.logName
        }
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

extension LedgerServer {
    /// The caller and its scopes: a bearer token (a static one, else a JWT of the identity
    /// provider), else the client certificate (mTLS). 401 with the reason.
    func identify(_ request: Request, _ context: ServerRequestContext) async throws(HTTPRefusal) -> (caller: Caller, scopes: Set<Scope>) {
        let tokens = self.tokens
        if tokens.isEmpty && jwt == nil && configuration.insecureDev { return (.anonymous, Set(Scope.allCases)) }
        let who: (caller: Caller, scopes: Set<Scope>)
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            // "bearer" in any case, compared without lower-casing a copy (letters only: | 0x20 folds them).
            guard parts.count == 2, parts[0].utf8.count == 6, zip(parts[0].utf8, "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }) else {
                throw HTTPRefusal(.unauthorized, "a bearer token is required (Authorization: Bearer <token>)")
            }
            let token = parts[1].trimmingWhitespace()
            if let found = tokens.identify(token) {
                who = found
            } else if let jwt, JWTAuthenticator.looksLikeJWT(token) {
                do {
                    who = try await jwt.authenticate(token)
                } catch {
                    throw HTTPRefusal(.unauthorized, "invalid token: \(error.reason)", invalidToken: error.reason)
                }
            } else {
                throw HTTPRefusal(.unauthorized, "unknown token", invalidToken: "unknown token")
            }
        } else if tls?.clientCertificates == true, let identity = await ClientCertificateIdentity.peer(of: context.channel) {
            guard let scopes = tokens.scopes(ofCertificate: identity) else {
                throw HTTPRefusal(.unauthorized, "no cert= entry for the client certificate's identity \(JWTAuthenticator.quoted(identity))")
            }
            who = (Caller(named: "cert:" + identity), scopes)
        } else {
            throw HTTPRefusal(.unauthorized, "a bearer token is required (Authorization: Bearer <token>)")
        }
        return who
    }

    /// The one scope check, of a route's access and of a route's extra demand (`admin` for a
    /// registration `via: admin`, named by `what`): 403 `forbidden` when `scopes` lacks `scope`.
    func demand(_ scope: Scope, of scopes: Set<Scope>, for what: String? = nil) throws(HTTPRefusal) {
        guard scopes.contains(scope) else {
            throw HTTPRefusal(.forbidden, what.map { "\($0) needs the \(scope.rawValue) scope" } ?? "this caller lacks the \(scope.rawValue) scope")
        }
    }
}
