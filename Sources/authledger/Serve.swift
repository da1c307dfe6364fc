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
        Tokens come from AUTHLEDGER_TOKENS ("tokenA:read+audit,tokenB:write") and/or --tokens FILE \
        (the same entries, one per line; # comments). Scopes: read, write, audit, import, admin (admin implies all).
        --dev starts a loopback server with a fresh random admin token and prints it with curl examples; \
        on an empty store it first loads the recorded scenarios (Fixtures/scenarios) as `authledger demo` does.
        Each token may hold --max-subscribers-per-token event streams open (default 16); a client address may fail \
        to authenticate --auth-failure-limit times/s with bursts of --auth-failure-burst (default 10/s, 100) before \
        all its requests get 429 rate_limited for a while; --rate-limit requests/s per token (bursts of --rate-burst) \
        is off by default (a service token may use the whole server). /health is exempt from all of them.
        SIGTERM or SIGINT shut down gracefully: in-flight appends finish, event streams end.
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
    @OptionGroup var sharedSignals: SharedSignalsOptions
    @OptionGroup var witnessing: WitnessingOptions

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("unknown --log-level \(logLevel)") }
        LoggingSystem.bootstrap { label in
            var h = DeferredMetadataLogHandler(StreamLogHandler.standardError(label: label))
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "authledger.server")

        var config = ServerConfiguration()
        config.host = host
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        config.port = port
        config.insecureDev = insecureDev
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
        var tokenText = ProcessInfo.processInfo.environment["AUTHLEDGER_TOKENS"] ?? ""
        if let tokensFile {
            guard let data = FileManager.default.contents(atPath: tokensFile) else {
                throw ValidationError("cannot read --tokens \(tokensFile)")
            }
            tokenText += "\n" + String(decoding: data, as: UTF8.self)
        }
        do {
            config.tokens = try TokenStore(parsing: tokenText)
        } catch {
            throw ValidationError("tokens: \(error.description)")
        }
        var devToken: String?
        if dev {
            guard ["127.0.0.1", "localhost", "::1"].contains(host) else {
                throw ValidationError("--dev listens on loopback only (127.0.0.1, ::1 or localhost)")
            }
            let token = "dev-" + hexString((0..<24).map { _ in UInt8.random(in: 0...255) })
            config.tokens.add(token: token, scopes: [.admin])
            devToken = token
        }
        if config.tokens.isEmpty {
            guard insecureDev else {
                throw ValidationError("""
                no tokens: set AUTHLEDGER_TOKENS="token:read+write,…" or --tokens FILE \
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

        let configuration = global.configuration
        // Found at start, not at the first OTP or checkpoint: every server of one database must share these keys.
        try global.requireKeyFiles([.server, .checkpoint], for: "serve")
        let ledger = try global.openLedger()
        var loaded: (showcase: String?, users: [String]) = (nil, [])
        if dev, try await ledger.head().seq == 0 {
            loaded = try await loadScenariosForDev(ledger, now: config.clock())
        }
        let server = try LedgerServer(ledger: ledger, configuration: config, logger: logger)
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
            let devices = try await ledger.devices(user, QueryOptions(asOf: now, includeRevoked: true))["devices"]?.arrayValue ?? []
            let listed = devices.map { d in "\(d["deviceId"]?.stringValue ?? "?") (\(d["status"]?.stringValue ?? "?"))" }
            Output.line("  \(user): \(listed.isEmpty ? "no devices" : listed.joined(separator: ", "))")
            if showcase == nil, devices.contains(where: { $0["status"]?.stringValue == "active" }) { showcase = user }
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
