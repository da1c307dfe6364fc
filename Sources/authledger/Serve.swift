import ArgumentParser
import AuthLedger
import AuthLedgerServer
import AuthLedgerSharedSignals
import Foundation
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP service (docs/REFERENCE.md section 5).",
        discussion: """
        Tokens come from AUTHLEDGER_TOKENS ("ci=tokenA:read+audit,mailer=tokenB:write") and/or --tokens FILE \
        (the same entries, one per line; # comments). Scopes: read, write, audit, import, admin (admin implies all). \
        A token's name (NAME=TOKEN:SCOPES) is recorded as meta.caller token:NAME on the events it appends; \
        an unnamed TOKEN:SCOPES entry is named unnamed-<8 hex digits of a keyed hash of the token>.
        --jwt-issuer URL --jwt-audience AUD also accepts the identity provider's access tokens (RS256, ES256, EdDSA; \
        keys from --jwt-jwks URL, else from the issuer's /.well-known/openid-configuration), scopes from the scope \
        claim's authledger:read … authledger:admin. --tls-cert and --tls-key (PEM) serve HTTPS only (TLS 1.2+); \
        --tls-client-ca requires client certificates, whose identity (SAN URI, else DNS name) gets the scopes of a \
        cert=IDENTITY:SCOPES entry of the tokens. SIGHUP reloads the certificates, the tokens and the witness policy (a part that fails to load keeps the one in force).
        --config FILE (YAML or JSON) gives any of these options by their long name (port: 8443, tls-cert: …); \
        flags and AUTHLEDGER_STORE, AUTHLEDGER_ORIGIN, AUTHLEDGER_SSF_ISSUER override it.
        --dev starts a loopback server with a fresh random admin token and prints it with curl examples; \
        on an empty store it first loads the recorded scenarios (Fixtures/scenarios) as `authledger demo` does.
        Each token may hold --max-subscribers-per-token event streams open (default 16); a client address may fail \
        to authenticate --auth-failure-limit times/s with bursts of --auth-failure-burst (default 10/s, 100) before \
        all its requests get 429 rate_limited for a while; --rate-limit requests/s per token (bursts of --rate-burst) \
        is off by default (a service token may use the whole server). /health is exempt from all of them.
        SIGTERM drains first: /readyz answers 503 for --drain-seconds (default 5, 0 with --dev) while everything else is \
        served; then, as on SIGINT, the server stops accepting connections, in-flight requests finish, event \
        streams end, and it exits 0. /livez touches no storage; /readyz fails while the store does not answer within 1 s.
        """
    )

    @OptionGroup var global: GlobalOptions
    @Option(help: "Interface to listen on.") var host = "127.0.0.1"
    @Option(help: "TCP port (0: any free port).") var port = 8080
    @Option(name: .customLong("tokens"), help: "A file of token:scope+scope entries.") var tokensFile: String?
    @Flag(name: .customLong("insecure-dev"), help: "Allow starting with no tokens: every caller is admin. Never in production.")
    var insecureDev = false
    @Flag(name: .customLong("dev"), help: "Development: loopback only, a random admin token printed with curl examples.")
    var dev = false
    @Option(help: "With --dev on an empty store: the recorded scenarios to load first (default: Fixtures/scenarios of this checkout).")
    var fixtures: String?
    @Option(name: .customLong("rate-limit"), help: "Requests per second each token may make on average (0, the default: no limit); over it 429 rate_limited.")
    var rateLimit: Double = 0
    @Option(name: .customLong("rate-burst"), help: "Requests a token may make at once before --rate-limit applies.")
    var rateBurst = 100
    @Option(name: .customLong("max-subscribers-per-token"), help: "Event streams one token may hold open at once (0: no limit); over it 429 rate_limited.")
    var maxSubscribersPerToken = 16
    @Option(name: .customLong("auth-failure-limit"), help: "Failed authentications per second a client address may make on average (0: no limit).")
    var authFailureLimit: Double = 10
    @Option(name: .customLong("auth-failure-burst"), help: "Failed authentications an address may make at once before --auth-failure-limit applies.")
    var authFailureBurst = 100
    @Option(name: .customLong("max-concurrent-verifies"), help: "Full verifications (GET /v1/verify) running at once; more get 429.")
    var maxConcurrentVerifies = 2
    @Option(help: "The origin of signed checkpoints (default $AUTHLEDGER_ORIGIN, else \(CheckpointSigner.defaultOrigin): set your own).")
    var origin: String?
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"
    @Option(name: .customLong("jwt-issuer"), help: "Accept access tokens (JWTs) of this identity provider (its iss).")
    var jwtIssuer: String?
    @Option(name: .customLong("jwt-audience"), help: "With --jwt-issuer: the aud the tokens must include.")
    var jwtAudience: String?
    @Option(name: .customLong("jwt-jwks"), help: "With --jwt-issuer: the URL of its JWKS (default: the jwks_uri of its OIDC discovery document).")
    var jwtJWKS: String?
    @Option(name: .customLong("tls-cert"), help: "Serve HTTPS only with this certificate chain (PEM); needs --tls-key.")
    var tlsCert: String?
    @Option(name: .customLong("tls-key"), help: "The private key (PEM) of --tls-cert.")
    var tlsKey: String?
    @Option(name: .customLong("tls-client-ca"), help: "Require client certificates issued by these CAs (PEM); cert=IDENTITY:SCOPES entries give their scopes.")
    var tlsClientCA: String?
    @Option(name: .customLong("config"), help: "A YAML or JSON file of serve options by long name; flags and the environment override it.")
    var config: String?
    @Option(name: .customLong("log-format"), help: "text, or json: one JSON object per line (time, level, message; for requests requestId, method, route, status, durationMs, caller), request lines at info.")
    var logFormat = "text"
    @Option(name: .customLong("access-log"), help: "A file to append one JSON line to per request that reads a user's data (user, caller, route, status, time); never a token or a personal value.")
    var accessLog: String?
    @Option(name: .customLong("drain-seconds"), help: "On SIGTERM, how long /readyz answers 503 before the server stops accepting connections (default 5; 0 with --dev).")
    var drainSeconds: Double?
    @Option(name: .customLong("heartbeat-interval"), help: "Seconds an idle event stream waits before its keep-alive: the feeds' `: heartbeat` comment, a watch's progress event (default 15).")
    var heartbeatInterval: Double = 15
    @Option(name: .customLong("index-interval"), help: "How often at most the index log of user proofs gets an entry when the log has grown, in seconds (default 1; 0: only before /checkpoint signs).")
    var indexInterval: Double = 1
    @OptionGroup var sharedSignals: SharedSignalsOptions
    @OptionGroup var witnessing: WitnessingOptions

    func run() async throws {
        if let config {
            // The file's options first, then the command line's (which win), parsed again.
            let fileArguments = try ServeConfigFile.arguments(path: config, environment: ProcessInfo.processInfo.environment)
            var again = try Serve.parse(fileArguments + Self.commandLineArguments())
            again.config = nil
            return try await again.run()
        }
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("unknown --log-level \(logLevel)") }
        switch logFormat {
        case "text":
            LoggingSystem.bootstrap { label in
                var h = DeferredMetadataLogHandler(StreamLogHandler.standardError(label: label))
                h.logLevel = level
                return h
            }
        case "json":
            LoggingSystem.bootstrap { label in
                var h = JSONLogHandler.standardError(label: label)
                h.logLevel = level
                return h
            }
        default:
            throw ValidationError("--log-format must be text or json")
        }
        let logger = Logger(label: "authledger.server")

        var config = ServerConfiguration()
        config.host = host
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        config.port = port
        config.insecureDev = insecureDev
        if logFormat == "json" { config.requestLogLevel = .info }
        config.accessLogPath = accessLog
        let drain = drainSeconds ?? (dev ? 0 : 5)
        guard drain >= 0, drain <= 3600 else { throw ValidationError("--drain-seconds must be between 0 and 3600") }
        config.drainDuration = .milliseconds(Int64(drain * 1000))
        guard heartbeatInterval >= 0.1, heartbeatInterval <= 3600 else { throw ValidationError("--heartbeat-interval must be between 0.1 and 3600") }
        config.heartbeatInterval = .milliseconds(Int64(heartbeatInterval * 1000))
        guard indexInterval >= 0, indexInterval <= 3600 else { throw ValidationError("--index-interval must be between 0 and 3600") }
        config.indexInterval = indexInterval > 0 ? .milliseconds(Int64(indexInterval * 1000)) : nil
        // The checkpoint origin is checked now, not at the first /checkpoint.
        let checkpointOrigin = origin ?? global.configuration.effectiveOrigin
        try CheckpointSigner.checkOrigin(checkpointOrigin)
        if checkpointOrigin == CheckpointSigner.defaultOrigin {
            logger.warning("checkpoints are signed for the default origin \(CheckpointSigner.defaultOrigin); set --origin or AUTHLEDGER_ORIGIN to your log's own name")
        }
        config.checkpointOrigin = origin
        guard rateLimit >= 0, rateLimit.isFinite else { throw ValidationError("--rate-limit must be 0 (no limit) or more") }
        guard rateBurst >= 1 else { throw ValidationError("--rate-burst must be at least 1") }
        guard maxSubscribersPerToken >= 0 else { throw ValidationError("--max-subscribers-per-token must be 0 (no limit) or more") }
        config.rateLimit = rateLimit > 0 ? RateLimit(perSecond: rateLimit, burst: rateBurst) : nil
        config.maxSubscribersPerToken = maxSubscribersPerToken > 0 ? maxSubscribersPerToken : nil
        guard authFailureLimit >= 0, authFailureLimit.isFinite else { throw ValidationError("--auth-failure-limit must be 0 (no limit) or more") }
        guard authFailureBurst >= 1 else { throw ValidationError("--auth-failure-burst must be at least 1") }
        config.authFailureLimit = authFailureLimit > 0 ? RateLimit(perSecond: authFailureLimit, burst: authFailureBurst) : nil
        guard maxConcurrentVerifies >= 1 else { throw ValidationError("--max-concurrent-verifies must be at least 1") }
        config.maxConcurrentVerifies = maxConcurrentVerifies
        let loadTokens = Self.tokenLoader(file: tokensFile)
        do {
            config.tokens = try loadTokens()
        } catch {
            throw ValidationError("tokens: \(error)")
        }
        var devToken: String?
        if dev {
            guard ["127.0.0.1", "localhost", "::1"].contains(host) else {
                throw ValidationError("--dev listens on loopback only (127.0.0.1, ::1 or localhost)")
            }
            guard tlsCert == nil, tlsKey == nil, tlsClientCA == nil else {
                throw ValidationError("--dev serves plain HTTP on loopback: leave out --tls-cert, --tls-key and --tls-client-ca")
            }
            let token = "dev-" + hexString((0..<24).map { _ in UInt8.random(in: 0...255) })
            try config.tokens.add(token: token, scopes: [.admin], name: "dev")
            devToken = token
        } else {
            // The dev token lives only as long as its process: a reload would drop it.
            config.loadTokens = loadTokens
            config.reloadOnHangup = true
        }
        config.jwt = try jwtConfiguration()
        config.tls = try tlsFiles()
        if config.tokens.isEmpty && config.jwt == nil {
            guard insecureDev else {
                throw ValidationError("""
                no tokens: set AUTHLEDGER_TOKENS="name=token:read+write,…", --tokens FILE or --jwt-issuer \
                (or --dev for a local server with a printed token, or --insecure-dev to serve without any)
                """)
            }
            Output.error("""
            ************************************************************************
            WARNING: --insecure-dev with no tokens: EVERY CALLER IS ADMIN.
            Anyone who can reach \(host):\(port) can read, append and rewrite policy.
            Use this for local experiments only.
            ************************************************************************
            """)
        }
        if let now = try global.fixedNow() { config.clock = { now } }
        try sharedSignals.apply(to: &config.sharedSignals)
        config.witnessing = try witnessing.configuration()
        if !dev { config.loadWitnessing = { [witnessing] in try witnessing.configuration() } }

        let configuration = global.configuration
        // Found at start, not at the first OTP or checkpoint: every server of one database must share these keys.
        try global.requireKeyFiles([.server, .checkpoint], for: "serve")
        let ledger = try await global.openLedger()
        var loaded: (showcase: String?, users: [String]) = (nil, [])
        if dev, try await ledger.head().seq == 0 {
            loaded = try await loadScenariosForDev(ledger, now: config.clock())
        }
        let server: LedgerServer
        do {
            server = try LedgerServer(ledger: ledger, configuration: config, logger: logger)
        } catch let e as ServerConfigurationError {
            throw ValidationError(e.description)
        } catch let e as TokenConfigurationError {
            throw ValidationError(e.description)
        }
        server.bootstrapMetricsSystem()
        let store = global.storeName
        let host = self.host
        let banner = devToken
        let scenarios = loaded
        do {
            try await server.run(onListening: { port in
                guard let banner else { return }
                Serve.printDevBanner(host: host, port: port, token: banner, store: store, showcase: scenarios.showcase, loaded: scenarios.users)
            })
        } catch {
            // Not a ledger refusal: the port is taken, say.
            Output.error("error: serve: \(error)")
            Foundation.exit(1)
        }
        logger.info("stopped")
    }

    /// This process's `serve` arguments, without `--config FILE`.
    static func commandLineArguments() -> [String] {
        var args = Array(normalisedArguments(Array(CommandLine.arguments.dropFirst())).dropFirst())
        var out: [String] = []
        while !args.isEmpty {
            let a = args.removeFirst()
            if a == "--config" { if !args.isEmpty { args.removeFirst() }; continue }
            if a.hasPrefix("--config=") { continue }
            out.append(a)
        }
        return out
    }

    /// Reads the tokens: `AUTHLEDGER_TOKENS`, then the `--tokens` file (again at each reload).
    static func tokenLoader(file: String?) -> @Sendable () throws -> TokenStore {
        let fromEnvironment = ProcessInfo.processInfo.environment["AUTHLEDGER_TOKENS"] ?? ""
        return {
            var text = fromEnvironment
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw TokenConfigurationError("cannot read --tokens \(file)")
                }
                text += "\n" + String(decoding: data, as: UTF8.self)
            }
            return try TokenStore(parsing: text)
        }
    }

    /// `--jwt-issuer` with `--jwt-audience` (and `--jwt-jwks`), or nil.
    func jwtConfiguration() throws -> JWTConfiguration? {
        guard let jwtIssuer else {
            guard jwtAudience == nil, jwtJWKS == nil else { throw ValidationError("--jwt-audience and --jwt-jwks need --jwt-issuer") }
            return nil
        }
        guard let jwtAudience else { throw ValidationError("--jwt-issuer needs --jwt-audience") }
        let c = JWTConfiguration(issuer: jwtIssuer, audience: jwtAudience, jwksURL: jwtJWKS)
        do { try c.validate() } catch { throw ValidationError(error.description) }
        return c
    }

    /// `--tls-cert` with `--tls-key` (and `--tls-client-ca`), or nil.
    func tlsFiles() throws -> TLSFiles? {
        switch (tlsCert, tlsKey) {
        case let (cert?, key?): return TLSFiles(certificate: cert, key: key, clientCA: tlsClientCA)
        case (nil, nil):
            guard tlsClientCA == nil else { throw ValidationError("--tls-client-ca needs --tls-cert and --tls-key") }
            return nil
        default: throw ValidationError("--tls-cert and --tls-key go together")
        }
    }

    /// `serve --dev` on an empty store: loads the recorded scenarios as `demo` does and
    /// prints each user's devices. Returns a user with an active device to show in the
    /// banner (nil when there were no scenarios to load) and the users loaded.
    func loadScenariosForDev(_ ledger: Ledger, now: Timestamp) async throws -> (showcase: String?, users: [String]) {
        guard let dir = fixtures ?? Demo.locateScenarios() else {
            Output.line("Empty store, and no Fixtures/scenarios to load (--fixtures DIR): starting empty.")
            return (nil, [])
        }
        var events = 0
        let users = try await Demo.loadScenarios(from: dir, into: ledger) { _, outcome in events += outcome.appended.count }
        Output.line("Empty store: loaded the recorded scenarios (\(events) events from \(dir)), as `authledger demo` does. Users:")
        var showcase: String?
        for user in users {
            let devices = try await ledger.devices(of: user, QueryOptions(asOf: now, includeRevoked: true)).devices
            let listed = devices.map { d in "\(d.deviceId) (\(d.status.name))" }
            Output.line("  \(user): \(listed.isEmpty ? "no devices" : listed.joined(separator: ", "))")
            if showcase == nil, devices.contains(where: { $0.status == .active }) { showcase = user }
        }
        return (showcase ?? users.first, users)
    }

    static func printDevBanner(host: String, port: Int, token: String, store: String, showcase: String? = nil, loaded: [String] = []) {
        let base = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        // With the scenarios loaded, show a user of theirs and register someone new.
        let (user, newUser, newName) = showcase.map { ($0, "frank", "Frank iPhone") } ?? ("alice", "alice", "Alice iPhone")
        var tries = ""
        if showcase != nil {
            tries += "  curl -s $AUTHLEDGER_URL/v1/users/\(user)/devices -H \"Authorization: Bearer $TOKEN\"\n"
            if user != "alice", loaded.contains("alice") {
                tries += "  curl -s \"$AUTHLEDGER_URL/v1/users/alice/devices?includeRevoked=true\" -H \"Authorization: Bearer $TOKEN\"\n"
            }
        }
        tries += """
          curl -s -X POST $AUTHLEDGER_URL/v1/users/\(newUser)/devices -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \\
               -d '{"deviceId":"iphone","name":"\(newName)","kind":"mobile"}'
          curl -s $AUTHLEDGER_URL/v1/users/\(newUser)/devices -H "Authorization: Bearer $TOKEN"
          curl -N "$AUTHLEDGER_URL/v1/events?from=1" -H "Authorization: Bearer $TOKEN"
        """
        Output.line("""
        AuthLedger dev server on \(base) (store \(store)); Ctrl-C stops it.
        Admin token for this run (paste into your shell):

          export AUTHLEDGER_URL=\(base) TOKEN=\(token)

        Auditor console (signs in at once; the token rides in the fragment, which browsers do not send):

          \(base)/console#token=\(token)

        Try:
        \(tries)
        """)
    }
}
