import AuthLedger
import Hummingbird

extension LedgerServer {
    /// The device-proof routes (reference section 11): key rotation and link redemption.
    func registerProofRoutes(_ t: RouteFamily) {
        t.on(.post, "/v1/users/{user}/devices/{deviceId}/key", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["publicKey", "signature", "actor"])
            guard let jwk = try b.stringMap("publicKey") else { throw LedgerError.invalid("missing field \"publicKey\"", field: "publicKey") }
            return try await perform(.rotateKey(user: try user(ctx), deviceId: try param(ctx, "deviceId"),
                                                publicKey: try Command.publicKey(jwk.json), signature: try b.requiredString("signature")), b)
        }
        t.on(.post, "/v1/verification-links/redeem", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["token", "platform", "pushToken", "publicKey", "name", "kind", "actor"])
            let start = ContinuousClock().now
            do {
                let request = try LinkRedemptionRequest(
                    token: try b.requiredString("token"), name: try b.string("name", raw: true), kind: try b.string("kind"),
                    platform: try b.string("platform"), pushToken: try b.string("pushToken"),
                    publicKey: try b.stringMap("publicKey").map { try Command.publicKey($0.json) })
                let result = try await ledger.redeemLink(request, meta: try b.meta(), clock: configuration.clock)
                metrics.appended(result.events.count, since: start)
                return JSONResponse.make(result.json, status: .created)
            } catch let e as LedgerError {
                // A wrong link token is a failed authentication: it counts against the caller's address.
                if e.code == .linkInvalid || e.code == .linkExpired || e.field == "token" {
                    authFailures?.failed(ctx.remoteAddress)
                }
                throw e.withoutDataPrefix
            }
        }
    }
}
