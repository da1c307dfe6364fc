import AuthLedger
import AuthLedgerSharedSignals
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The request context of the service: Hummingbird's core context plus the channel
/// (an event stream cuts off a subscriber that stopped reading by closing it).
public struct ServerRequestContext: RequestContext {
    /// Hummingbird's per-request storage (request decoder, logger, …).
    public var coreContext: CoreRequestContextStorage
    /// The connection the request came in on.
    public let channel: any Channel
    /// Who the request comes from, once authorized (nil on open routes).
    var caller: Caller?
    /// The scopes of the caller's token (admin expanded; empty on open routes).
    var scopes: Set<Scope> = []
    /// The caller's name for the request log and the access log, once authorized.
    let callerName = CallerName()

    /// The context of a new request, as Hummingbird creates it.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// The AuthLedger HTTP service (SPEC section 5) over one `Ledger`.
///
/// Routes call the same command and query layer as the CLI; appends go through the
/// ledger's writer thread (`perform`, `submit`), never blocking an event loop.
public final class LedgerServer: Sendable {
    /// The ledger the routes read and write.
    public let ledger: Ledger
    /// The configuration the server was created with.
    public let configuration: ServerConfiguration
    let metrics: ServerMetrics
    let logger: Logger
    /// Per-token request rate (nil: unlimited).
    let buckets: TokenBuckets?
    /// Per-token open event streams (nil: unlimited).
    let subscriberSlots: SubscriberSlots?
    /// The OpenID Shared Signals transmitter (the AuthLedgerSharedSignals module; its routes: SharedSignalsRoutes.swift).
    public let sharedSignals: SharedSignals
    /// Failed authentications per client address (nil: unlimited).
    let authFailures: AuthFailureLimiter?
    /// Full verifications running at once.
    let verifySlots: ConcurrencyLimit
    /// The checkpoint signer, loaded at first use.
    let checkpointSigners = CheckpointSignerCache()
    /// Full hash tiles served so far (immutable; bounded).
    let fullTiles = FullTileCache()
    /// Collects witness cosignatures (nil without a witness policy).
    let witnessCollector: WitnessCollector?
    /// The tokens in force (the configuration's, until a reload replaces them).
    private let liveTokens: Mutex<TokenStore>
    /// The identity provider's access tokens (nil: static tokens only).
    let jwt: JWTAuthenticator?
    /// The TLS context of new connections (nil: plain HTTP).
    let tls: TLSContextBox?
    /// Whether to get traffic (`/readyz`): the store answers, not draining.
    let readiness = Readiness()
    /// Who read whose data (`--access-log`; nil: not kept).
    let accessLog: AccessLog?
    /// The gauges `/metrics` reads when scraped.
    let scrapeGauges: ScrapeGauges

    /// A server for `ledger` (it does not listen until `run(onListening:)` or
    /// `serviceGroup(…)`). Throws when no tokens are
    /// configured without `insecureDev`, or a limit of the configuration is out of range.
    public init(ledger: Ledger, configuration: ServerConfiguration, logger: Logger = Logger(label: "authledger.server")) throws {
        guard !configuration.tokens.isEmpty || configuration.jwt != nil || configuration.insecureDev else {
            throw TokenConfigurationError("no tokens configured (AUTHLEDGER_TOKENS, --tokens FILE or --jwt-issuer); refusing to start without --insecure-dev")
        }
        try configuration.jwt?.validate()
        if configuration.tls?.clientCA == nil, configuration.tokens.hasCertificates {
            throw ServerConfigurationError("cert= entries need client certificates (--tls-client-ca)")
        }
        if let r = configuration.rateLimit {
            guard r.perSecond > 0, r.perSecond.isFinite, r.burst >= 1 else {
                throw ServerConfigurationError("the rate limit needs a rate above 0 and a burst of at least 1")
            }
        }
        if let r = configuration.authFailureLimit {
            guard r.perSecond > 0, r.perSecond.isFinite, r.burst >= 1 else {
                throw ServerConfigurationError("the limit of failed authentications needs a rate above 0 and a burst of at least 1")
            }
        }
        guard configuration.maxConcurrentVerifies >= 1 else {
            throw ServerConfigurationError("at least one verification must be allowed to run")
        }
        if let n = configuration.maxSubscribersPerToken, n < 1 {
            throw ServerConfigurationError("the limit of event streams per token must be at least 1")
        }
        self.ledger = ledger
        self.configuration = configuration
        // Watches and waits evaluate answers at the server's clock, as its queries do.
        ledger.setWatchClock(configuration.clock)
        self.metrics = ServerMetrics()
        self.logger = logger
        self.buckets = configuration.rateLimit.map(TokenBuckets.init)
        self.subscriberSlots = configuration.maxSubscribersPerToken.map { SubscriberSlots(limit: $0) }
        self.sharedSignals = SharedSignals(ledger: ledger, configuration: configuration.sharedSignals, clock: configuration.clock)
        self.authFailures = configuration.authFailureLimit.map { AuthFailureLimiter($0) }
        self.verifySlots = ConcurrencyLimit(configuration.maxConcurrentVerifies)
        self.liveTokens = Mutex(configuration.tokens)
        self.jwt = configuration.jwt.map { JWTAuthenticator($0, logger: logger) }
        self.tls = try configuration.tls.map { TLSContextBox(try $0.makeContext(), clientCertificates: $0.clientCA != nil) }
        self.accessLog = try configuration.accessLogPath.map(AccessLog.init(path:))
        self.scrapeGauges = ScrapeGauges(registry: metrics.registry, ledger: ledger)
        self.witnessCollector = configuration.witnessing.map { [checkpointSigners, metrics] w in
            WitnessCollector(ledger: ledger, configuration: w, signer: { try checkpointSigners.signer(ledger, origin: configuration.checkpointOrigin) },
                             metricsFactory: metrics.factory, logger: logger)
        }
    }

    /// Bootstraps the process-wide `MetricsSystem` with this server's Prometheus
    /// registry, so library metrics (Hummingbird's request metrics) appear on
    /// `/metrics` too. Once per process: the CLI calls it, tests don't.
    public func bootstrapMetricsSystem() {
        MetricsSystem.bootstrap(metrics.factory)
    }

    /// The service as a `ServiceGroup`: the HTTP server and the challenge sweeper.
    /// `onListening` receives the bound port (useful with port 0).
    public func serviceGroup(gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint],
                             onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> ServiceGroup {
        let routes = buildRouter()
        var services: [any Service] = []
        if let interval = configuration.sweepInterval {
            services.append(ChallengeSweeper(ledger: ledger, interval: interval, pollInterval: configuration.pollInterval,
                                             clock: configuration.clock, metrics: metrics, logger: logger))
        }
        services.append(SSFPushService(signals: sharedSignals, logger: logger))
        if let witnessCollector { services.append(witnessCollector) }
        if let interval = configuration.indexInterval { services.append(PeriodicService.userIndexUpdater(ledger, every: interval, logger: logger)) }
        if let interval = configuration.readerCheckInterval {
            services.append(PeriodicService.readerCheck(ledger, every: interval, logger: logger))
        }
        if let jwt { services.append(JWKSWarmUp(authenticator: jwt)) }
        if configuration.reloadOnHangup { services.append(HangupReloader(server: self)) }
        let app = Application(
            router: routes.router,
            server: tls.map { HTTPServerBuilder.reloadableTLS($0) } ?? .http1(),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            services: services,
            onServerRunning: { [logger, configuration, sharedSignals] channel in
                let port = channel.localAddress?.port ?? configuration.port
                sharedSignals.setListeningIssuer(host: configuration.host, port: port)
                logger.info("listening", metadata: ["host": "\(configuration.host)", "port": "\(port)",
                                                    "scheme": "\(configuration.tls == nil ? "http" : "https")"])
                await onListening(port)
            },
            logger: logger
        )
        // SIGTERM, when it is a shutdown signal, drains first (`Drainer`); the others stop at once.
        var group: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: app)]
        let drainSignals = gracefulShutdownSignals.filter { $0 == .sigterm }
        if !drainSignals.isEmpty {
            group.append(.init(service: Drainer(readiness: readiness, duration: configuration.drainDuration, signals: drainSignals, logger: logger),
                               successTerminationBehavior: .gracefullyShutdownGroup))
        }
        return ServiceGroup(configuration: .init(services: group, gracefulShutdownSignals: gracefulShutdownSignals.filter { $0 != .sigterm },
                                                 logger: logger))
    }

    /// Runs until SIGTERM or SIGINT, then shuts down gracefully: no new connections,
    /// in-flight requests (appends included) finish, event streams end. SIGTERM first drains:
    /// `/readyz` answers 503 for ``ServerConfiguration/drainDuration`` while requests are still served.
    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await serviceGroup(onListening: onListening).run()
    }

    /// The tokens in force.
    var tokens: TokenStore { liveTokens.withLock { $0 } }

    /// Reads the certificates, the tokens and the witness policy again (SIGHUP): each that
    /// loads replaces the one in force (new connections get the new certificate; open ones
    /// keep theirs); each that fails keeps the old and is logged with why. Returns the
    /// failures (empty: all reloaded).
    @discardableResult
    public func reload() -> [String] {
        var failures: [String] = []
        if let files = configuration.tls, let tls {
            do {
                tls.replace(try files.makeContext())
                logger.info("reload: TLS certificate reloaded")
            } catch {
                failures.append("TLS: \(error.description)")
            }
        }
        if let loadTokens = configuration.loadTokens {
            do {
                let next = try loadTokens()
                guard !next.isEmpty || jwt != nil || configuration.insecureDev else {
                    throw TokenConfigurationError("no tokens left")
                }
                if next.hasCertificates && tls?.clientCertificates != true {
                    throw TokenConfigurationError("cert= entries need client certificates (--tls-client-ca)")
                }
                liveTokens.withLock { $0 = next }
                logger.info("reload: tokens reloaded", metadata: ["tokens": "\(next.count)"])
            } catch {
                failures.append("tokens: \(error)")
            }
        }
        if let loadWitnessing = configuration.loadWitnessing, let witnessCollector {
            do {
                guard let next = try loadWitnessing() else { throw ServerConfigurationError("the witness policy is gone") }
                witnessCollector.replace(next)
                logger.info("reload: witness policy reloaded", metadata: ["witnesses": "\(next.policy.witnesses.count)"])
            } catch {
                failures.append("witness policy: \(error)")
            }
        }
        for f in failures { logger.error("reload failed; keeping the one in force", metadata: ["what": "\(f)"]) }
        return failures
    }

    /// A place for one more event stream of the request's caller; 429 `rate_limited`
    /// when it already holds `maxSubscribersPerToken` open.
    func subscriberSlot(_ context: ServerRequestContext) throws(HTTPRefusal) -> SubscriberSlot? {
        guard let slots = subscriberSlots, let caller = context.caller else { return nil }
        guard let slot = slots.acquire(caller) else {
            throw HTTPRefusal(.rateLimited, "this token already holds \(slots.limit) event streams open (the limit); close one first")
        }
        return slot
    }
}

extension Double {
    /// `50`, `0.5`: a rate as a person writes it.
    var formattedRate: String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}

/// At most `limit` of something at once (`GET /v1/verify`); more are refused, not queued.
final class ConcurrencyLimit: Sendable {
    let limit: Int
    private let running = Mutex(0)

    init(_ limit: Int) { self.limit = limit }

    func tryAcquire() -> Bool {
        running.withLock { running in
            guard running < limit else { return false }
            running += 1
            return true
        }
    }

    func release() { running.withLock { $0 -= 1 } }
    var inUse: Int { running.withLock { $0 } }
}
