import AuthLedger
import AuthLedgerServer
import Logging
import ServiceLifecycle

/// A `LedgerServer` over a bench ledger on a free loopback port, for the phases that measure
/// HTTP: no rate limit, no sweeper, errors-only logging.
struct BenchServer {
    /// The server (its Shared Signals transmitter, for the SSF bench).
    let server: LedgerServer
    /// The port it listens on.
    let port: Int
    private let group: ServiceGroup
    private let running: Task<Void, Error>

    /// Starts a server over `ledger` with `tokens` (the `TokenStore` text), and what
    /// `configure` sets beside them, and waits until it listens.
    static func start(_ ledger: Ledger, tokens: String,
                      configure: (inout ServerConfiguration) throws -> Void = { _ in }) async throws -> BenchServer {
        var config = ServerConfiguration()
        config.host = "127.0.0.1"
        config.port = 0
        config.tokens = try TokenStore(parsing: tokens)
        config.rateLimit = nil
        config.sweepInterval = nil
        try configure(&config)
        var logger = Logger(label: "authledger.bench")
        logger.logLevel = .error
        let server = try LedgerServer(ledger: ledger, configuration: config, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let group = server.serviceGroup(gracefulShutdownSignals: [], onListening: { continuation.yield($0) })
        let running = Task { try await group.run() }
        var it = ports.makeAsyncIterator()
        guard let port = await it.next() else {
            running.cancel()
            throw LedgerError(.storageError, "the bench server did not start")
        }
        return BenchServer(server: server, port: port, group: group, running: running)
    }

    /// Cancels the server's task (for a phase that failed before `stop()`; harmless after it).
    func cancel() { running.cancel() }

    /// Shuts the server down gracefully and waits for it.
    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
