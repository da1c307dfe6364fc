import AuthLedger
import Foundation
import Hummingbird

extension LedgerServer {
    /// `DELETE /v1/users/{u}` (admin): erases the user's personal values (reference §7).
    func registerErasureRoutes(_ t: RouteFamily) {
        t.on(.delete, "/v1/users/{user}", .scope(.admin)) { [self] req, ctx in
            let b = try await body(req, ["reason", "actor"], optional: true)
            let (u, reason, meta) = (try user(ctx), try b.string("reason"), try b.meta())
            let (ledger, now) = (ledger, configuration.clock())
            let start = ContinuousClock().now
            // The erasure and the store's compaction run on the writer thread; this task waits suspended.
            let outcome = try await ledger.erase(u, reason: reason, actor: meta?["actor"], caller: meta?["caller"], now: now)
            metrics.appended(1, since: start)
            return JSONResponse.make(.object([
                ("user", .string(u)), ("erased", .bool(true)), ("erasedEvents", .int(Int64(outcome.erasedEvents))),
                ("events", .array([.object([("seq", .int(Int64(outcome.event.seq))), ("type", .string(outcome.event.event.type.name))])])),
            ]))
        }
    }
}
