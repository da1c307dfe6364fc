import AuthLedger
@testable import AuthLedgerServer
import AuthLedgerWitness
import Crypto
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// Who appends: named static tokens, `meta.caller` and its default actor, and the identity
/// provider's JWTs (a JWKS and discovery server in the test, keys rotated mid-test).
@Suite(.timeLimit(.minutes(2))) struct ServiceIdentityTests {
    @Test func namedTokensOldFormAndCertificates() throws {
        let store = try TokenStore(parsing: """
        ci=ci-secret:read+write
        legacy-secret:audit
        padded==:read
        cert=spiffe://example.org/mailer:write
        """)
        #expect(store.name(of: "ci-secret") == "ci")
        #expect(store.scopes(of: "ci-secret") == [.read, .write])
        // The old form reads, and its name is stable and holds nothing of the token.
        let legacy = try #require(store.name(of: "legacy-secret"))
        #expect(legacy.hasPrefix("unnamed-") && legacy.count == "unnamed-".count + 8)
        #expect(!legacy.contains("legacy") && !legacy.contains("secret"))
        #expect(try TokenStore(parsing: "legacy-secret:audit").name(of: "legacy-secret") == legacy)
        #expect(store.name(of: "padded==")?.hasPrefix("unnamed-") == true)
        #expect(store.scopes(of: "padded==") == [.read])
        #expect(store.scopes(ofCertificate: "spiffe://example.org/mailer") == [.write])
        #expect(store.scopes(ofCertificate: "spiffe://example.org/other") == nil)
        #expect(store.scopes(of: "spiffe://example.org/mailer") == nil)
        // A name given to two tokens, one token under two names, a bad name: refused, naming the line.
        for bad in ["a=t1:read\na=t2:read", "a=t1:read\nb=t1:read", "cert=:read"] {
            #expect(throws: TokenConfigurationError.self) { try TokenStore(parsing: bad) }
        }
        var built = TokenStore()
        #expect(throws: TokenConfigurationError.self) { try built.add(token: "t", scopes: [.read], name: "b@d") }
        #expect(throws: TokenConfigurationError.self) { try built.add(token: "t", scopes: [.read], name: "cert") }
        // Before a valid name, `=` is part of an old-form token.
        #expect(try TokenStore(parsing: "b@d=t1:read").scopes(of: "b@d=t1") == [.read])
        do {
            _ = try TokenStore(parsing: "ok=t1:read\na=t2:read\na=t3:read")
        } catch {
            #expect(error.description.contains("line 3"))
            #expect(!error.description.contains("t3"))
        }
    }

    @Test func callerAndDefaultActorOnEveryAppend() async throws {
        try await withServer(configure: { $0.tokens = try! TokenStore(parsing: "ci=ci-token:admin,importer=imp-token:import,reader-token:read") }) { s in
            var r = try await s.call(.POST, "/v1/users/alice/devices", token: "ci-token", body: #"{"deviceId":"p1","name":"Phone one"}"#)
            #expect(r.status == 201)
            r = try await s.call(.POST, "/v1/users/alice/challenges", token: "ci-token",
                                 body: #"{"requestingDeviceId":"p1","action":"login","actor":"device:p1"}"#)
            #expect(r.status == 201)
            r = try await s.call(.POST, "/v1/events", token: "imp-token", body: """
            [{"type":"device.registered","user":"bob","at":"2026-03-01T08:00:00Z","meta":{"caller":"token:forged","actor":"user"},
              "data":{"deviceId":"b1","name":"Bob phone","kind":"mobile","binding":"permanent","via":"initial"}}]
            """)
            #expect(r.status == 201, "\(r.body)")
            r = try await s.call(.PUT, "/v1/policy", token: "ci-token", body: #"{"coolingSeconds":0}"#)
            #expect(r.status == 200)
            r = try await s.call(.DELETE, "/v1/users/bob", token: "ci-token")
            #expect(r.status == 200, "\(r.body)")

            let alice = try await s.call(.GET, "/v1/users/alice/history", token: "reader-token").json?.arrayValue ?? []
            #expect(alice.count == 3)
            // No actor in the command: service:<the token's name>; an actor given stays, the caller beside it.
            #expect(alice[0]["meta"]?["actor"]?.stringValue == "service:ci")
            #expect(alice.allSatisfy { $0["meta"]?["caller"]?.stringValue == "token:ci" })
            #expect(alice[1]["meta"]?["actor"]?.stringValue == "device:p1")
            let bob = try await s.call(.GET, "/v1/users/bob/history", token: "reader-token").json?.arrayValue ?? []
            // An import records its importer (a caller it names is not believed) and keeps its actor.
            #expect(bob.first?["meta"]?["caller"]?.stringValue == "token:importer")
            #expect(bob.first?["meta"]?["actor"]?.stringValue == "user")
            #expect(bob.last?["type"]?.stringValue == "user.erased")
            #expect(bob.last?["meta"]?["caller"]?.stringValue == "token:ci")
            // The chain still verifies, new events carrying the field.
            #expect(try await s.call(.GET, "/v1/verify", token: "ci-token").status == 200)
        }
    }

    @Test func theCoreChecksTheCallerForm() throws {
        func decode(_ caller: String) throws {
            _ = try EventDecoder.decode(try JSON.parse(Array("""
            {"type":"device.accessed","user":"u","at":"2026-03-01T08:00:00Z","meta":{"caller":"\(caller)"},"data":{"deviceId":"d"}}
            """.utf8)))
        }
        for good in ["service:mailer", "token:ci", "cert:spiffe://example.org/x"] { try decode(good) }
        for bad in ["mailer", "admin:x", "token:", "cert:" + String(repeating: "x", count: 129)] {
            #expect(throws: LedgerError.self, "\(bad)") { try decode(bad) }
        }
    }

    @Test func reloadReplacesWhatLoadsAndKeepsWhatFails() async throws {
        let dir = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (tokensFile, policyFile) = (dir + "/tokens", dir + "/witnesses")
        func write(_ path: String, _ text: String) throws { try text.write(toFile: path, atomically: true, encoding: .utf8) }
        let w1 = try Cosigner(name: "w1.example", seed: [UInt8](repeating: 1, count: 32))
        let w2 = try Cosigner(name: "w2.example", seed: [UInt8](repeating: 2, count: 32))
        try write(tokensFile, "alpha=alpha-secret:read\n")
        try write(policyFile, "witness w1 \(w1.verifierKey) http://127.0.0.1:1\nquorum w1\n")
        let loadPolicy: @Sendable () throws -> WitnessingConfiguration? = {
            var c = try WitnessingConfiguration(policy: WitnessPolicy(parsing: String(contentsOfFile: policyFile, encoding: .utf8)))
            c.interval = .seconds(3600)
            return c
        }
        try await withServer(configure: {
            $0.tokens = try! TokenStore(parsing: String(contentsOfFile: tokensFile, encoding: .utf8))
            $0.loadTokens = { try TokenStore(parsing: String(contentsOfFile: tokensFile, encoding: .utf8)) }
            $0.witnessing = try! loadPolicy()
            $0.loadWitnessing = loadPolicy
        }) { s in
            #expect(try await s.call(.GET, "/v1/users/u/devices", token: "alpha-secret").status == 200)
            // A new file: the tokens and the policy in it replace the ones in force.
            try write(tokensFile, "beta=beta-secret:read\n")
            try write(policyFile, "witness w1 \(w1.verifierKey) http://127.0.0.1:1\nwitness w2 \(w2.verifierKey) http://127.0.0.1:1\ngroup g 1 w1 w2\nquorum g\n")
            #expect(s.server.reload().isEmpty)
            #expect(try await s.call(.GET, "/v1/users/u/devices", token: "alpha-secret").status == 401)
            #expect(try await s.call(.GET, "/v1/users/u/devices", token: "beta-secret").status == 200)
            #expect(s.server.witnessCollector?.peers.map(\.witness.label) == ["w1", "w2"])
            // Broken files: each part says why and keeps the one in force.
            try write(tokensFile, "beta=beta-secret:read\nno scopes here\n")
            try write(policyFile, "witness w3 not-a-key\n")
            let failures = s.server.reload()
            #expect(failures.count == 2 && failures[0].hasPrefix("tokens:") && failures[1].hasPrefix("witness policy:"), "\(failures)")
            #expect(!failures.joined().contains("beta-secret"))
            #expect(try await s.call(.GET, "/v1/users/u/devices", token: "beta-secret").status == 200)
            #expect(s.server.witnessCollector?.peers.count == 2)
        }
    }

    // MARK: JWTs

    @Test func jwtAccessTokensAndEveryRefusal() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let (ec, ed) = (P256.Signing.PrivateKey(), Curve25519.Signing.PrivateKey())
        idp.publish([.ec("ec-1", ec.publicKey), .ed("ed-1", ed.publicKey)])
        try await withServer(configure: {
            $0.jwt = JWTConfiguration(issuer: idp.issuer, audience: "authledger")
            $0.jwt?.refetchInterval = .zero
            $0.authFailureLimit = RateLimit(perSecond: 0.001, burst: 20)
        }) { s in
            let now = Date().timeIntervalSince1970
            func claims(_ extra: [String: Any] = [:]) -> [String: Any] {
                var c: [String: Any] = ["iss": idp.issuer, "aud": ["authledger", "other"], "exp": now + 300, "nbf": now - 10,
                                        "client_id": "push-sender", "sub": "user-x", "scope": "openid authledger:write authledger:read"]
                for (k, v) in extra { c[k] = v }
                return c
            }
            // Valid ES256 and EdDSA tokens: the caller is service:<client_id>, the scopes from `scope`.
            var r = try await s.call(.POST, "/v1/users/carol/devices", token: JWS.es256(ec, kid: "ec-1", claims()),
                                     body: #"{"deviceId":"c1","name":"Carol phone"}"#)
            #expect(r.status == 201, "\(r.body)")
            r = try await s.call(.GET, "/v1/users/carol/history", token: JWS.eddsa(ed, kid: "ed-1", claims(["client_id": NSNull()])))
            #expect(r.status == 200, "\(r.body)")
            let history = r.json?.arrayValue ?? []
            #expect(history.first?["meta"]?["caller"]?.stringValue == "service:push-sender")
            #expect(history.first?["meta"]?["actor"]?.stringValue == "service:push-sender")
            // Scopes come from `scope` alone: read only is 403 on a command.
            r = try await s.call(.POST, "/v1/users/carol/devices", token: JWS.es256(ec, kid: "ec-1", claims(["scope": "authledger:read"])),
                                 body: #"{"deviceId":"c2","name":"Carol tablet"}"#)
            #expect(r.status == 403)

            // Each bad token: 401, its reason in WWW-Authenticate, nothing appended.
            let publicJWK = Array(ec.publicKey.x963Representation)
            let refused: [(String, String)] = [
                (JWS.es256(ec, kid: "ec-1", claims(["exp": now - 3600])), "expired"),
                (JWS.es256(ec, kid: "ec-1", claims(["nbf": now + 3600])), "not valid yet"),
                (JWS.es256(ec, kid: "ec-1", claims(["aud": "someone-else"])), "wrong audience"),
                (JWS.es256(ec, kid: "ec-1", claims(["iss": "https://evil.example"])), "wrong issuer"),
                (JWS.unsigned(kid: "ec-1", claims()), "alg 'none' is not accepted"),
                (JWS.hs256(key: publicJWK, kid: "ec-1", claims()), "alg 'HS256' is not accepted"),
                (JWS.es256(P256.Signing.PrivateKey(), kid: "ec-1", claims()), "bad signature"),
                (JWS.es256(ec, kid: "nobody", claims()), "unknown kid"),
                (JWS.eddsa(ed, kid: "ec-1", claims()), "does not match its key"),
                ("a.b.c", "malformed token"),
                ("garbage-that-is-no-token", "unknown token"),
            ]
            for (token, reason) in refused {
                r = try await s.call(.POST, "/v1/users/carol/devices", token: token, body: #"{"deviceId":"c3","name":"Carol laptop"}"#)
                #expect(r.status == 401, "\(reason): \(r.status) \(r.body)")
                #expect(r.error == "unauthorized")
                let header = r.headers.first(name: "WWW-Authenticate") ?? ""
                #expect(header.contains(#"error="invalid_token""#) && header.contains(reason), "\(reason): \(header)")
            }
            let devices = try await s.call(.GET, "/v1/users/carol/devices", token: "reader-token").json?["devices"]?.arrayValue ?? []
            #expect(devices.count == 1)
            // Every refusal counted as a failed authentication of the address: the limit (burst 20) is near.
            for _ in 0..<20 { _ = try await s.call(.GET, "/v1/users/carol/devices", token: "a.b.c") }
            r = try await s.call(.GET, "/v1/users/carol/devices", token: "reader-token")
            #expect(r.status == 429)
        }
    }

    @Test func rotatedKeysAreFetchedAgainForAnUnknownKidAtMostOncePerInterval() async throws {
        let idp = try await TestIdentityProvider.start()
        defer { idp.stop() }
        let (old, new) = (P256.Signing.PrivateKey(), P256.Signing.PrivateKey())
        idp.publish([.ec("k1", old.publicKey)])
        let now = Date().timeIntervalSince1970
        let claims: [String: Any] = ["iss": idp.issuer, "aud": "authledger", "exp": now + 300, "azp": "svc", "scope": "authledger:read"]
        // A long interval: after the fetch at start, a new kid is not fetched again yet.
        try await withServer(configure: { $0.jwt = JWTConfiguration(issuer: idp.issuer, audience: "authledger") }) { s in
            #expect(try await s.call(.GET, "/v1/users/u/devices", token: JWS.es256(old, kid: "k1", claims)).status == 200)
            let fetched = await s.server.jwt!.fetches
            idp.publish([.ec("k2", new.publicKey)])
            let r = try await s.call(.GET, "/v1/users/u/devices", token: JWS.es256(new, kid: "k2", claims))
            #expect(r.status == 401)
            #expect(r.headers.first(name: "WWW-Authenticate")?.contains("unknown kid 'k2'") == true)
            #expect(await s.server.jwt!.fetches == fetched)
        }
        // With the interval passed (zero here), the unknown kid fetches the rotated set: the new key
        // works, the old one is gone.
        idp.publish([.ec("k1", old.publicKey)])
        try await withServer(configure: {
            $0.jwt = JWTConfiguration(issuer: idp.issuer, audience: "authledger")
            $0.jwt?.refetchInterval = .zero
        }) { (s: TestServer) async throws in
            let before = try await s.call(.GET, "/v1/users/u/devices", token: JWS.es256(old, kid: "k1", claims))
            #expect(before.status == 200)
            idp.publish([.ec("k2", new.publicKey)])
            let rotated = try await s.call(.GET, "/v1/users/u/devices", token: JWS.es256(new, kid: "k2", claims))
            #expect(rotated.status == 200)
            let retired = try await s.call(.GET, "/v1/users/u/devices", token: JWS.es256(old, kid: "k1", claims))
            #expect(retired.status == 401)
            #expect(idp.discoveries >= 1)
        }
    }

    @Test func staticTokensKeepWorkingBesideJWTsAndAnIdPDownIsNoCrash() async throws {
        // An issuer nobody answers at: the JWKS fetch fails (logged), static tokens work, JWTs are 401.
        try await withServer(configure: {
            $0.jwt = JWTConfiguration(issuer: "http://127.0.0.1:9", audience: "authledger")
            $0.jwt?.refetchInterval = .zero
        }) { s in
            #expect(try await s.call(.GET, "/v1/users/u/devices", token: "reader-token").status == 200)
            let token = JWS.es256(P256.Signing.PrivateKey(), kid: "k", ["iss": "http://127.0.0.1:9", "aud": "authledger"])
            let r = try await s.call(.GET, "/v1/users/u/devices", token: token)
            #expect(r.status == 401)
            #expect(try await s.call(.GET, "/health", token: nil).status == 200)
        }
    }
}

/// A JWS compact serialization made by hand with swift-crypto (the tests' own minting, for
/// the malformed cases a JOSE library would refuse to make).
enum JWS {
    static func part(_ object: [String: Any]) -> String {
        Base64URL.encode(Array(try! JSONSerialization.data(withJSONObject: object.filter { !($0.value is NSNull) }, options: [.sortedKeys])))
    }

    static func input(_ alg: String, _ kid: String, _ claims: [String: Any]) -> String {
        part(["alg": alg, "kid": kid, "typ": "JWT"]) + "." + part(claims)
    }

    static func es256(_ key: P256.Signing.PrivateKey, kid: String, _ claims: [String: Any]) -> String {
        let i = input("ES256", kid, claims)
        return i + "." + Base64URL.encode(Array(try! key.signature(for: Array(i.utf8)).rawRepresentation))
    }

    static func eddsa(_ key: Curve25519.Signing.PrivateKey, kid: String, _ claims: [String: Any]) -> String {
        let i = input("EdDSA", kid, claims)
        return i + "." + Base64URL.encode(Array(try! key.signature(for: Array(i.utf8))))
    }

    static func unsigned(kid: String, _ claims: [String: Any]) -> String { input("none", kid, claims) + "." }

    /// HS256 keyed with public key bytes: the key-confusion attack.
    static func hs256(key: [UInt8], kid: String, _ claims: [String: Any]) -> String {
        let i = input("HS256", kid, claims)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(i.utf8), using: SymmetricKey(data: key))
        return i + "." + Base64URL.encode(Array(mac))
    }
}

/// An identity provider on loopback: OIDC discovery and a JWKS the test replaces.
final class TestIdentityProvider: Sendable {
    enum Key {
        case ec(String, P256.Signing.PublicKey)
        case ed(String, Curve25519.Signing.PublicKey)

        var jwk: [String: String] {
            switch self {
            case let .ec(kid, k):
                let raw = Array(k.rawRepresentation)
                return ["kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "x": Base64URL.encode(Array(raw[..<32])),
                        "y": Base64URL.encode(Array(raw[32...]))]
            case let .ed(kid, k):
                return ["kty": "OKP", "crv": "Ed25519", "kid": kid, "x": Base64URL.encode(Array(k.rawRepresentation))]
            }
        }
    }

    let port: Int
    private let jwks = Mutex<[UInt8]>(Array(#"{"keys":[]}"#.utf8))
    private let discoveryCount = Atomic<Int>(0)
    private let group: ServiceGroup
    private let task: Task<Void, Error>

    var issuer: String { "http://127.0.0.1:\(port)/realm" }
    var discoveries: Int { discoveryCount.load(ordering: .relaxed) }

    private init(port: Int, group: ServiceGroup, task: Task<Void, Error>) {
        self.port = port
        self.group = group
        self.task = task
    }

    func publish(_ keys: [Key]) {
        let body = try! JSONSerialization.data(withJSONObject: ["keys": keys.map(\.jwk)])
        jwks.withLock { $0 = Array(body) }
    }

    static func start() async throws -> TestIdentityProvider {
        let holder = Holder()
        let router = Router()
        router.get("/realm/.well-known/openid-configuration") { _, _ -> Response in
            guard let idp = holder.idp else { return Response(status: .serviceUnavailable) }
            idp.discoveryCount.add(1, ordering: .relaxed)
            let doc = #"{"issuer":"\#(idp.issuer)","jwks_uri":"http://127.0.0.1:\#(idp.port)/realm/certs"}"#
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: doc)))
        }
        router.get("/realm/certs") { _, _ -> Response in
            guard let idp = holder.idp else { return Response(status: .serviceUnavailable) }
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: idp.jwks.withLock { $0 })))
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { continuation.yield($0.localAddress?.port ?? 0) })
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: app.logger))
        let task = Task { try await group.run() }
        var it = ports.makeAsyncIterator()
        guard let port = await it.next() else { throw TestFailure("the identity provider did not start") }
        let idp = TestIdentityProvider(port: port, group: group, task: task)
        holder.idp = idp
        return idp
    }

    func stop() {
        let group = group
        Task { await group.triggerGracefulShutdown() }
    }

    private final class Holder: @unchecked Sendable {
        private let lock = NSLock()
        private var value: TestIdentityProvider?
        var idp: TestIdentityProvider? {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }
}
