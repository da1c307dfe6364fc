import AsyncHTTPClient
import AuthLedger
import Foundation
import JWTKit
import Logging
import NIOCore

/// Access tokens of the services' identity provider (`serve --jwt-issuer URL --jwt-audience
/// AUD [--jwt-jwks URL]`).
public struct JWTConfiguration: Sendable, Equatable {
    /// The issuer (`iss`) tokens must name; without `jwksURL`, its
    /// `/.well-known/openid-configuration` gives the `jwks_uri`.
    public var issuer: String
    /// The audience (`aud`) tokens must include.
    public var audience: String
    /// Where the issuer's keys are (a JWKS); nil: found by OIDC discovery.
    public var jwksURL: String?
    /// The JWKS is fetched again for an unknown `kid` at most this often (a failed fetch counts).
    public var refetchInterval: Duration = .seconds(60)
    /// Clock skew allowed on `exp` and `nbf`.
    public var leewaySeconds: Double = 60

    /// Tokens of `issuer` for `audience`, the keys from `jwksURL` or from discovery.
    public init(issuer: String, audience: String, jwksURL: String? = nil) {
        self.issuer = issuer
        self.audience = audience
        self.jwksURL = jwksURL
    }

    /// Checks the URLs and the audience (a usage error names what is wrong).
    public func validate() throws(ServerConfigurationError) {
        for (name, url) in [("--jwt-issuer", issuer), ("--jwt-jwks", jwksURL)] {
            guard let url else { continue }
            guard let u = URL(string: url), u.scheme == "https" || u.scheme == "http", u.host != nil else {
                throw ServerConfigurationError("\(name) must be an http(s) URL")
            }
        }
        guard !audience.isEmpty else { throw ServerConfigurationError("--jwt-audience must not be empty") }
    }
}

/// Verifies access tokens of the identity provider: RS256, ES256 or EdDSA signatures by a
/// key of its JWKS (cached; fetched again for an unknown `kid`, at most once per
/// `refetchInterval`), `iss`, `aud`, `exp` and `nbf` (with leeway), and gives the
/// caller (`service:<client_id, else azp, else sub>`) and its scopes (the `scope` claim's
/// `authledger:<scope>` values). Every refusal is a ``JWTRefusal`` with its reason.
final class JWTAuthenticator: Sendable {
    let configuration: JWTConfiguration
    private let keys: JWKSCache
    let logger: Logger

    /// The algorithms accepted, each tied to one kind of key: a token's `alg` must be its key's.
    static let algorithms: Set<String> = ["RS256", "ES256", "EdDSA"]

    init(_ configuration: JWTConfiguration, client: HTTPClient = .shared, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        keys = JWKSCache(configuration: configuration, client: client, logger: logger)
    }

    /// Fetches the keys at start, unless a request already did (the first request need
    /// not wait); a failure is logged.
    func warmUp() async { await keys.warmUp() }

    /// Number of JWKS fetches attempted (tests).
    var fetches: Int { get async { await keys.fetches } }

    /// Whether `token` looks like a JWS compact serialization (three base64url parts).
    static func looksLikeJWT(_ token: String) -> Bool {
        token.utf8.lazy.filter { $0 == UInt8(ascii: ".") }.count == 2
    }

    /// The caller and scopes of a valid token; a ``JWTRefusal`` naming the reason otherwise.
    func authenticate(_ token: String, now: Date = Date()) async throws(JWTRefusal) -> (caller: Caller, scopes: Set<Scope>) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
              let header = try? JSON.parse(headerBytes), header.objectValue != nil else {
            throw JWTRefusal("malformed token")
        }
        guard let alg = header["alg"]?.stringValue else { throw JWTRefusal("the token has no alg") }
        guard Self.algorithms.contains(alg) else {
            throw JWTRefusal("alg \(Self.quoted(alg)) is not accepted (RS256, ES256, EdDSA)")
        }
        let kid = header["kid"]?.stringValue
        guard let key = await keys.key(for: kid) else {
            throw JWTRefusal(kid.map { "unknown kid \(Self.quoted($0))" } ?? "the token has no kid")
        }
        guard key.alg == alg else { throw JWTRefusal("alg \(alg) does not match its key (\(key.alg))") }
        let claims: AccessTokenClaims
        do {
            claims = try await key.collection.verify(token, as: AccessTokenClaims.self)
        } catch let e as JWTError where e.errorType == .signatureVerificationFailed {
            throw JWTRefusal("bad signature")
        } catch {
            throw JWTRefusal("malformed token or claims")
        }
        return try check(claims, now: now)
    }

    /// `iss`, `aud`, `exp`, `nbf`, the caller's name and the scopes.
    func check(_ c: AccessTokenClaims, now: Date) throws(JWTRefusal) -> (caller: Caller, scopes: Set<Scope>) {
        guard c.iss == configuration.issuer else { throw JWTRefusal("wrong issuer") }
        guard c.aud?.value.contains(configuration.audience) == true else { throw JWTRefusal("wrong audience") }
        let t = now.timeIntervalSince1970, leeway = configuration.leewaySeconds
        guard let exp = c.exp else { throw JWTRefusal("the token has no exp") }
        guard t < exp + leeway else { throw JWTRefusal("the token expired") }
        if let nbf = c.nbf, t + leeway < nbf { throw JWTRefusal("the token is not valid yet (nbf)") }
        guard let name = c.client_id ?? c.azp ?? c.sub else { throw JWTRefusal("the token has no client_id, azp or sub") }
        guard TokenStore.isValidIdentity(name) else {
            throw JWTRefusal("the token's client_id, azp or sub must be 1–128 characters without control characters")
        }
        var scopes = Set<Scope>()
        for item in (c.scope ?? "").split(separator: " ") where item.hasPrefix("authledger:") {
            if let s = Scope(rawValue: String(item.dropFirst("authledger:".count))) { scopes.insert(s) }
        }
        return (Caller(named: "service:" + name), TokenStore.expanded(scopes))
    }

    /// `s` clipped, in single quotes (the reason goes inside a quoted-string of `WWW-Authenticate`).
    static func quoted(_ s: String) -> String { "'" + EventDecoder.clip(s) + "'" }
}

/// Why a bearer token was refused (401 `unauthorized`, the reason in `WWW-Authenticate`).
struct JWTRefusal: Error, Sendable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// The claims of an access token the service reads; their checks are ``JWTAuthenticator/check(_:now:)``'s.
struct AccessTokenClaims: JWTPayload {
    var iss: String?
    var aud: AudienceClaim?
    var exp: Double?
    var nbf: Double?
    var scope: String?
    var client_id: String?
    var azp: String?
    var sub: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// The issuer's keys by `kid`, each with the one algorithm its type allows; fetched again
/// (one fetch at a time) when a token names a `kid` not in it, at most once per interval.
actor JWKSCache {
    struct Key: Sendable {
        let alg: String
        let collection: JWTKeyCollection
    }

    let configuration: JWTConfiguration
    let client: HTTPClient
    let logger: Logger
    private var byKid: [String: Key] = [:]
    private var jwksURL: String?
    private var lastAttempt: ContinuousClock.Instant?
    private var inFlight: Task<Void, Never>?
    private(set) var fetches = 0

    init(configuration: JWTConfiguration, client: HTTPClient, logger: Logger) {
        self.configuration = configuration
        self.client = client
        self.logger = logger
        jwksURL = configuration.jwksURL
    }

    /// The key for `kid` (nil: the only key, when there is exactly one), fetching the JWKS
    /// again when it is unknown and the last fetch is old enough.
    func key(for kid: String?) async -> Key? {
        if let k = lookup(kid) { return k }
        guard await refresh(force: false) else { return nil }
        return lookup(kid)
    }

    private func lookup(_ kid: String?) -> Key? {
        if let kid { return byKid[kid] }
        return byKid.count == 1 ? byKid.first?.value : nil
    }

    func warmUp() async {
        if lastAttempt == nil { _ = await refresh(force: true) }
    }

    /// Fetches the JWKS (joining a fetch under way); false when the last attempt is too
    /// recent (and not `force`).
    func refresh(force: Bool) async -> Bool {
        if let inFlight {
            await inFlight.value
            return true
        }
        let now = ContinuousClock.now
        if !force, let last = lastAttempt, now - last < configuration.refetchInterval { return false }
        lastAttempt = now
        fetches += 1
        let task = Task { await self.fetch() }
        inFlight = task
        await task.value
        inFlight = nil
        return true
    }

    private func fetch() async {
        do {
            if jwksURL == nil { jwksURL = try await discover() }
            let jwks = try await get(jwksURL!)
            guard let items = jwks["keys"]?.arrayValue else { throw ServerConfigurationError("the JWKS has no keys array") }
            var next: [String: Key] = [:]
            for item in items {
                guard let (kid, key) = try await Self.key(item) else { continue }
                next[kid] = key
            }
            byKid = next
            logger.info("JWKS fetched", metadata: ["keys": "\(next.count)", "url": "\(jwksURL!)"])
        } catch {
            logger.warning("JWKS fetch failed; keeping the keys held", metadata: ["error": "\(error)"])
        }
    }

    /// The `jwks_uri` of the issuer's OIDC discovery document (its `issuer` must match).
    private func discover() async throws -> String {
        let base = configuration.issuer.hasSuffix("/") ? String(configuration.issuer.dropLast()) : configuration.issuer
        let doc = try await get(base + "/.well-known/openid-configuration")
        guard doc["issuer"]?.stringValue == configuration.issuer else {
            throw ServerConfigurationError("the discovery document names another issuer")
        }
        guard let uri = doc["jwks_uri"]?.stringValue else { throw ServerConfigurationError("the discovery document has no jwks_uri") }
        return uri
    }

    private func get(_ url: String) async throws -> JSON {
        // Short: a request whose token has an unknown kid waits for this fetch.
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(3))
        guard response.status == .ok else { throw ServerConfigurationError("GET \(url): HTTP \(response.status.code)") }
        let body = try await response.body.collect(upTo: 1 << 20)
        return try JSON.parse(body.readableBytesView)
    }

    /// A usable signing key of the JWKS: RSA → RS256, EC P-256 → ES256, OKP Ed25519 →
    /// EdDSA; a key with another type, curve or `alg`, for encryption, or without `kid` is skipped.
    static func key(_ item: JSON) async throws -> (String, Key)? {
        guard let kid = item["kid"]?.stringValue, let kty = item["kty"]?.stringValue else { return nil }
        if let use = item["use"]?.stringValue, use != "sig" { return nil }
        let alg: String
        switch (kty, item["crv"]?.stringValue) {
        case ("RSA", _): alg = "RS256"
        case ("EC", "P-256"): alg = "ES256"
        case ("OKP", "Ed25519"): alg = "EdDSA"
        default: return nil
        }
        if let declared = item["alg"]?.stringValue, declared != alg { return nil }
        // The key's alg is set, so jwt-kit's signer for it is fixed: a token's header cannot choose another.
        var jwk = try JWK(json: item.serialized())
        jwk.algorithm = JWK.Algorithm(rawValue: alg)
        let collection = JWTKeyCollection()
        do {
            try await collection.add(jwk: jwk)
        } catch {
            return nil
        }
        return (kid, Key(alg: alg, collection: collection))
    }
}
