/// How the service acts as an OpenID Shared Signals transmitter (`serve --ssf-…`).
public struct SharedSignalsConfiguration: Sendable {
    /// The issuer (`iss` of every SET, base of the endpoint URLs). nil: `http://<host>:<port>`
    /// of the listening server — set an `https://` URL in production.
    public var issuer: String?
    /// Where the signing keys and the secret key live (nil: `ssf-keys` in the ledger's
    /// key directory; the `authledger` tool sets it from `--ssf-key-dir` or `AUTHLEDGER_SSF_KEY_DIR`).
    public var keyDirectory: String?
    /// How long a replaced signing key stays in the JWKS.
    public var keyRetention: Duration = .seconds(7 * 86_400)
    /// Push: the first retry waits this long; each further one twice as long, up to `retryMax`.
    public var retryInitial: Duration = .milliseconds(500)
    /// Push: the longest wait between retries.
    public var retryMax: Duration = .seconds(60)
    /// Push: one POST may take this long.
    public var requestTimeout: Duration = .seconds(10)
    /// Poll without `returnImmediately`: the longest a request waits for a SET (`serve --ssf-poll-wait`).
    public var pollWait: Duration = .seconds(15)
    /// Most SETs in one poll answer.
    public var maxPollEvents = 1000
    /// Push: how often the delivery checkpoint is written at most (and at the latest
    /// when the worker has nothing to send).
    public var checkpointInterval: Duration = .milliseconds(250)

    /// The defaults listed with each setting.
    public init() {}
}
