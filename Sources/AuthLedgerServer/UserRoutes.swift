import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird

extension LedgerServer {
    /// The user resources (SPEC 3 queries, SPEC 4 commands): devices, cooling, pending
    /// approvals, challenges, OTPs.
    func registerUserRoutes(_ t: RouteFamily) {
        // Queries (SPEC 3)
        // Each also watches (`?watch=true`); a challenge also waits for its answer (`?wait=S`).
        t.on(.get, "/v1/users/{user}/devices", .scope(.read)) { [self] req, ctx in
            try await query(req, ctx, .devices) { try await ledger.devices(of: $0, $1).json }
        }
        t.on(.get, "/v1/users/{user}/cooling", .scope(.read)) { [self] req, ctx in
            try await query(req, ctx, .cooling) { try await ledger.cooling(of: $0, $1).json }
        }
        t.on(.get, "/v1/users/{user}/pending", .scope(.read)) { [self] req, ctx in
            try await query(req, ctx, .pending) { try await ledger.pending(of: $0, $1).json }
        }
        registerHistoryRoute(t)
        registerUsersRoute(t)
        t.on(.get, "/v1/users/{user}/challenges/{challengeId}", .scope(.read)) { [self] req, ctx in
            let id = try param(ctx, "challengeId")
            return try await query(req, ctx, .challenge, challengeId: id) { try await ledger.challenge(id, of: $0, $1).json }
        }

        // Commands (SPEC 2, 4)
        t.on(.post, "/v1/users/{user}/devices", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["deviceId", "name", "kind", "platform", "appId", "pushToken", "binding", "via", "grantId", "challengeId",
                                         "publicKey", "actor"])
            // Admin registration needs no proof: it is the admin's (SPEC 5).
            if try b.string("via") == "admin" { try demand(.admin, of: ctx.scopes, for: "registering via admin") }
            return try await perform(.register(
                user: try user(ctx), deviceId: try b.requiredString("deviceId"), name: try b.requiredString("name", raw: true),
                kind: try b.string("kind"), platform: try b.string("platform"), appId: try b.string("appId"),
                pushToken: try b.string("pushToken"), binding: try b.string("binding"), via: try b.string("via"),
                grantId: try b.string("grantId"), challengeId: try b.string("challengeId"),
                publicKey: try b.stringMap("publicKey").map { try Command.publicKey($0.json) }), b, status: .created)
        }
        t.on(.patch, "/v1/users/{user}/devices/{deviceId}", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["name", "pushToken", "actor"])
            let (u, d) = (try user(ctx), try param(ctx, "deviceId"))
            switch (b.has("name"), b.has("pushToken")) {
            case (true, false): return try await perform(.rename(user: u, deviceId: d, name: try b.requiredString("name", raw: true)), b)
            case (false, true): return try await perform(.updatePushToken(user: u, deviceId: d, pushToken: try b.requiredString("pushToken")), b)
            default: throw LedgerError.invalid("give either \"name\" (rename) or \"pushToken\"", field: "name")
            }
        }
        t.on(.delete, "/v1/users/{user}/devices/{deviceId}", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["reason", "actor"], optional: true)
            return try await perform(.revoke(user: try user(ctx), deviceId: try param(ctx, "deviceId"), reason: try b.string("reason")), b)
        }
        t.on(.delete, "/v1/users/{user}/devices", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["reason", "actor"], optional: true)
            return try await perform(.revokeAll(user: try user(ctx), reason: try b.string("reason")), b)
        }
        t.on(.post, "/v1/users/{user}/devices/{deviceId}/access", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["actor"], optional: true)
            return try await perform(.access(user: try user(ctx), deviceId: try param(ctx, "deviceId")), b)
        }
        t.on(.post, "/v1/users/{user}/verification-requests", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["deviceId", "name", "kind", "platform", "actor"])
            return try await perform(.requestVerification(
                user: try user(ctx), deviceId: try b.requiredString("deviceId"), name: try b.string("name", raw: true),
                kind: try b.string("kind"), platform: try b.string("platform")), b, status: .created)
        }
        t.on(.post, "/v1/users/{user}/challenges", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["requestingDeviceId", "action", "context", "actor"])
            return try await perform(.issueChallenge(
                user: try user(ctx), requestingDeviceId: try b.requiredString("requestingDeviceId"),
                action: try b.string("action") ?? Command.Default.action, context: try b.stringMap("context")), b, status: .created)
        }
        t.on(.post, "/v1/users/{user}/challenges/{challengeId}/approve", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["deviceId", "userVerified", "signature", "actor"])
            return try await perform(.approve(user: try user(ctx), challengeId: try param(ctx, "challengeId"),
                                              deviceId: try b.requiredString("deviceId"), userVerified: try b.bool("userVerified"),
                                              signature: try b.string("signature")), b)
        }
        t.on(.post, "/v1/users/{user}/challenges/{challengeId}/deny", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["deviceId", "signature", "actor"])
            return try await perform(.deny(user: try user(ctx), challengeId: try param(ctx, "challengeId"),
                                           deviceId: try b.requiredString("deviceId"), signature: try b.string("signature")), b)
        }
        t.on(.post, "/v1/users/{user}/otps", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["channel", "target", "actor"])
            return try await perform(.sendOTP(user: try user(ctx), channel: try b.requiredString("channel"),
                                              target: try b.requiredString("target")), b, status: .created)
        }
        t.on(.post, "/v1/users/{user}/otps/{otpId}/verify", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["code", "actor"])
            return try await perform(.verifyOTP(user: try user(ctx), otpId: try param(ctx, "otpId"), code: try b.requiredString("code")), b)
        }
    }

    /// Runs `command` through the ledger's writer and answers with its result (SPEC 4); a
    /// refusal (`otp_invalid` included, whose `otp.failed` was appended) is thrown as its error.
    func perform(_ command: Command, _ b: RequestBody, status: HTTPResponse.Status = .ok) async throws -> Response {
        let meta = try b.meta()
        let start = ContinuousClock().now
        let result: CommandResult
        do {
            result = try await ledger.perform(command, meta: meta, clock: configuration.clock)
        } catch let e as LedgerError {
            if let appended = e.appended { metrics.appended(appended.count, since: start) }
            throw e.withoutDataPrefix
        }
        metrics.appended(result.events.count, since: start)
        return JSONResponse.make(result.json, status: status)
    }
}
