import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the server's certificates, tokens and witness policy on each SIGHUP (``LedgerServer/reload()``)
/// until the service group shuts down.
struct HangupReloader: Service {
    let server: LedgerServer

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            for await _ in hangups {
                server.logger.info("SIGHUP: reloading certificates, tokens and the witness policy")
                server.reload()
            }
        }
    }
}

/// Fetches the identity provider's keys once at start, so the first request with a JWT
/// need not wait for them (a failure is logged; a later token fetches them again).
struct JWKSWarmUp: Service {
    let authenticator: JWTAuthenticator

    func run() async throws {
        await authenticator.warmUp()
        try? await gracefulShutdown()
    }
}
