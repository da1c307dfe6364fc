import AuthLedger
import AuthLedgerSharedSignals
import Hummingbird

/// Answers every error of a route in the API's error form (SPEC 5): the ledger's refusals
/// and the HTTP API's own with their status, body and headers (`Retry-After` for a cooling
/// window, `WWW-Authenticate` for 401/403), anything else as 503 `storage_error` without
/// its details; counts each refusal and notes failed authentications of the address.
struct APIErrorMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: LedgerServer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let e as HTTPRefusal {
            return refused(e, context)
        } catch let e as SharedSignalsRefusal {
            return refused(HTTPRefusal(e), context)
        } catch let e as LedgerError {
            server.metrics.refused(e.code.rawValue)
            if e.code == .storageError || e.code == .storageFull || e.code == .configurationError {
                context.logger.error("storage error", metadata: ["message": "\(e.message)"])
            } else {
                context.logger.debug("refused", metadata: ["code": "\(e.code.rawValue)"])
            }
            var response = APIError.response(e)
            // Seconds from the server's clock; none when the window is not ahead of it
            // (an imported event judged at its own, older time).
            if let until = e.until, e.code == .coolingPeriodActive {
                let ms = until.milliseconds - server.configuration.clock().milliseconds
                if ms > 0 { response.headers[.retryAfter] = "\((ms + 999) / 1000)" }
            }
            return response
        } catch let e as TokenConfigurationError {
            return APIError.response(LedgerError.invalid(e.description))
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
            server.metrics.refused(ErrorCode.storageError.rawValue)
            return APIError.response(LedgerError(.storageError, "internal error"))
        }
    }

    private func refused(_ e: HTTPRefusal, _ context: Context) -> Response {
        server.metrics.refused(e.code.rawValue)
        if e.code == .unauthorized { server.authFailures?.failed(context.remoteAddress) }
        context.logger.debug("refused", metadata: ["code": "\(e.code.rawValue)"])
        return APIError.response(e)
    }
}

extension ServerRequestContext {
    /// The peer's address, for the per-address limit of failed authentications.
    var remoteAddress: String { channel.remoteAddress?.ipAddress ?? "unknown" }
}
