import AuthLedger
import AuthLedgerSharedSignals
import Logging

/// How `authledger serve` runs: where it listens, who may call it, and its limits.
public struct ServerConfiguration: Sendable {
    /// Interface to bind (loopback by default: expose it deliberately).
    public var host = "127.0.0.1"
    /// TCP port; 0 picks a free one (see `LedgerServer.onListening`).
    public var port = 8080
    /// The bearer tokens and the scopes of client certificates; empty only with `jwt` or `insecureDev`.
    public var tokens = TokenStore()
    /// Access tokens of the services' identity provider (`--jwt-issuer`); nil: static tokens only.
    public var jwt: JWTConfiguration?
    /// HTTPS (and mTLS with a client CA) on the listener; nil: plain HTTP.
    public var tls: TLSFiles?
    /// Reads the tokens again (SIGHUP, ``LedgerServer/reload()``); nil: they are not reloaded.
    public var loadTokens: (@Sendable () throws -> TokenStore)?
    /// Reads the witness policy again (SIGHUP); nil: it is not reloaded. A server started
    /// without witnessing does not start it on a reload.
    public var loadWitnessing: (@Sendable () throws -> WitnessingConfiguration?)?
    /// Reload certificates, tokens and the witness policy on SIGHUP (the CLI sets it; tests call ``LedgerServer/reload()``).
    public var reloadOnHangup = false
    /// Serve without tokens: every caller is admin. For local experiments only.
    public var insecureDev = false
    /// Largest request body of a command.
    public var maxBodyBytes = 64 * 1024
    /// Largest body of `POST /v1/events`.
    public var maxAppendBytes = 4 * 1024 * 1024
    /// Most events in one `POST /v1/events`.
    public var maxAppendEvents = 10_000
    /// An idle event stream sends its keep-alive (a feed's `: heartbeat` comment, a
    /// watch's `progress` event) this often (`serve --heartbeat-interval`).
    public var heartbeatInterval: Duration = .seconds(15)
    /// How often a caught-up subscriber re-reads the head (appends of other processes).
    public var pollInterval: Duration = .milliseconds(250)
    /// A subscriber whose connection accepts nothing for this long is cut off (it
    /// resumes with `Last-Event-ID`).
    public var stallTimeout: Duration = .seconds(30)
    /// How often the sweeper looks for challenges past `expiresAt`; nil disables it.
    public var sweepInterval: Duration? = .seconds(1)
    /// How often at most the index log gets an entry (the user index brought up to the
    /// head) when the log has grown (reference section 14); nil: only before `/checkpoint` signs.
    public var indexInterval: Duration? = .seconds(1)
    /// Requests per second each token may make on average, with bursts up to
    /// `burst` (a token bucket per token; `/health` is exempt). Over it: 429
    /// `rate_limited` with `Retry-After`. nil (the default): no limit — a token is a
    /// service the operator configured, and one service must be able to drive the
    /// server's whole capacity; set one to share the server between services.
    public var rateLimit: RateLimit?
    /// Failed authentications (no token, an unknown token) per client address: over
    /// it, every request of that address but `/health` gets 429 `rate_limited` until
    /// the bucket refills — token guessing and unauthenticated floods are what is
    /// abusable. nil: no limit.
    public var authFailureLimit: RateLimit? = RateLimit(perSecond: 10, burst: 100)
    /// Full verifications (`GET /v1/verify`, which reads the whole log) running at
    /// once; more get 429 `rate_limited`.
    public var maxConcurrentVerifies = 2
    /// Event streams (`GET /v1/events`, `GET /v1/subscriptions/{name}/events`) one token
    /// may hold open at once. Over it: 429 `rate_limited`. nil: no limit.
    public var maxSubscribersPerToken: Int? = 16
    /// The Shared Signals transmitter (issuer, keys, push retries, poll waits).
    public var sharedSignals = SharedSignalsConfiguration()
    /// How often stale LMDB reader slots (of processes that died in a read) are
    /// cleared; nil disables it (it is also done when the store is opened).
    public var readerCheckInterval: Duration? = .seconds(30)
    /// The clock commands run at and queries default to. Tests move it.
    public var clock: @Sendable () -> Timestamp = Timestamp.now

    /// The origin of signed checkpoints (SPEC 6); nil: the ledger's configured origin
    /// (``/AuthLedger/Ledger/Configuration/origin``), else the default.
    public var checkpointOrigin: String?

    /// Witness cosigning of checkpoints (`serve --witness-policy`); nil: none, `/checkpoint` is the head's.
    public var witnessing: WitnessingConfiguration?

    /// On SIGTERM, how long `/readyz` answers 503 before the server stops accepting
    /// connections (load balancers take it out meanwhile); everything else is still served.
    public var drainDuration: Duration = .seconds(5)
    /// `/readyz` fails when the store does not answer a read within this time.
    public var readinessTimeout: Duration = .seconds(1)

    /// The level of the one line logged per request (`requestId`, `method`, `route`,
    /// `status`, `durationMs`, `caller`): debug by default; `serve --log-format json` makes it info.
    public var requestLogLevel: Logger.Level = .debug
    /// `serve --access-log FILE`: where one JSON line per request that reads a user's data
    /// is appended (``AccessLog``); nil: none.
    public var accessLogPath: String?
    /// Where the routes' blocking work runs (a full `verify` on LMDB): NIO's pool of threads
    /// for blocking work. (Not public: a test puts a runner around it that notes where its work ran.)
    var blockingWorkRunner: any BlockingWorkRunner = ThreadPoolRunner()

    /// The defaults: 127.0.0.1:8080, no tokens, the limits of SPEC 5.5 at their default values.
    public init() {}
}
