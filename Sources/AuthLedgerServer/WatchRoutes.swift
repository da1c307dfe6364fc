import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension LedgerServer {
    /// Most keys one `GET /v1/watch` follows.
    static let maxWatchKeys = 1000
    /// Most seconds `?wait=` holds a challenge query.
    static let maxWaitSeconds = 60

    /// `GET /v1/watch?devices=…&pending=…&cooling=…&challenge=user:id`: several watches on one connection.
    func registerWatchRoutes(_ t: RouteFamily) {
        t.on(.get, "/v1/watch", .scope(.read)) { [self] req, ctx in
            let targets = try watchTargets(req)
            return try await watchStream(req, ctx, targets, wrapped: true)
        }
    }

    /// A query route's answer (`answer` under the request's options), its watch with
    /// `?watch=true`, or (a challenge with `?wait=S`) its answer once no longer pending.
    func query(_ req: Request, _ ctx: ServerRequestContext, _ projection: WatchTarget.Projection, challengeId: String? = nil,
               _ answer: (String, QueryOptions) async throws -> JSON) async throws -> Response {
        let user = try user(ctx)
        let o = try queryOptions(req)
        let q = req.uri.queryParameters
        let wait = try waitSeconds(req)
        // The header a watch resumes with is checked on the plain query too (it is the same
        // route): a malformed one is refused, never silently ignored.
        _ = try lastEventID(req)
        if let v = q.get("watch"), try flag(v, "watch") {
            guard wait == nil else { throw LedgerError.invalid("wait and watch do not go together", field: "wait") }
            return try await watchStream(req, ctx, [WatchTarget(projection, user: user, challengeId: challengeId, options: o)], wrapped: false)
        }
        if let wait, let challengeId {
            try refuseHistoric(req, "wait")
            let view = try await ledger.awaitAnswer(user: user, challenge: challengeId, timeout: .seconds(wait), asRequester: o.asRequester)
            return JSONResponse.make(view.json)
        }
        return JSONResponse.make(try await answer(user, o))
    }

    /// `?wait=S`: whole seconds from 1 to 60 (nil: absent).
    func waitSeconds(_ req: Request) throws(LedgerError) -> Int? {
        guard let text = req.uri.queryParameters.get("wait") else { return nil }
        guard let s = Int(text), text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), (1...Self.maxWaitSeconds).contains(s) else {
            throw LedgerError.invalid("wait must be whole seconds from 1 to \(Self.maxWaitSeconds)", field: "wait")
        }
        return s
    }

    /// `at` and `asOf` ask for a past answer: a watch (or a wait) follows the head, now.
    func refuseHistoric(_ req: Request, _ mode: String) throws(LedgerError) {
        let q = req.uri.queryParameters
        for name in ["at", "asOf"] where q.get(name) != nil {
            throw LedgerError.invalid("\(name) does not go with \(mode): it follows the head, now", field: name)
        }
    }

    /// The targets of `GET /v1/watch`: comma-separated user keys per projection (a
    /// challenge as `user:id`, split at its last colon), the view options of the plain
    /// queries; at most `maxWatchKeys` in all.
    func watchTargets(_ req: Request) throws(LedgerError) -> [WatchTarget] {
        let q = req.uri.queryParameters
        let o = try queryOptions(req)
        let options: Set<String> = ["current", "includeRevoked", "view"]
        var targets: [WatchTarget] = []
        for (rawName, rawValue) in q {
            let name = String(rawName)
            if options.contains(name) { continue }
            guard let projection = WatchTarget.Projection(rawValue: name) else {
                throw LedgerError.invalid("unknown parameter \"\(RequestBody.clip(name))\": watch devices, cooling, pending or challenge", field: name)
            }
            for item in String(rawValue).split(separator: ",", omittingEmptySubsequences: false) {
                let key = String(item)
                guard targets.count < Self.maxWatchKeys else {
                    throw LedgerError.invalid("at most \(Self.maxWatchKeys) keys on one watch", field: name)
                }
                if projection == .challenge {
                    guard let colon = key.lastIndex(of: ":") else {
                        throw LedgerError.invalid("a challenge is watched as user:challengeId", field: name)
                    }
                    let (user, id) = (String(key[..<colon]), String(key[key.index(after: colon)...]))
                    try checkKey(user, name)
                    try EventDecoder.checkId(id, name)
                    targets.append(WatchTarget(.challenge, user: user, challengeId: id, options: o))
                } else {
                    try checkKey(key, name)
                    targets.append(WatchTarget(projection, user: key, options: o))
                }
            }
        }
        guard !targets.isEmpty else {
            throw LedgerError.invalid("name what to watch: devices=, cooling=, pending= or challenge=", field: "devices")
        }
        return targets
    }

    /// A user key of parameter `name`, refused with that parameter named.
    private func checkKey(_ user: String, _ name: String) throws(LedgerError) {
        do { try EventDecoder.checkUser(user) } catch {
            throw LedgerError.invalid("\"\(RequestBody.clip(user))\" is not a user key", field: name)
        }
    }

    /// The watch of `targets` as Server-Sent Events, resumed after `Last-Event-ID`.
    func watchStream(_ req: Request, _ ctx: ServerRequestContext, _ targets: [WatchTarget], wrapped: Bool) async throws -> Response {
        try refuseHistoric(req, "watch")
        var from: UInt64?
        if let last = try lastEventID(req) {
            // A position of this log (at most the head); the watch checks it against its own read too.
            _ = try await resumePosition(after: last)
            from = last
        }
        let slot = try subscriberSlot(ctx)
        let watch = try await ledger.watch(targets, from: from)
        return serverSentEvents(context: ctx, slot: slot, label: "watch of \(watch.targets.count)") {
            WatchFrames(watch: watch, wrapped: wrapped)
        }
    }
}

/// A watch's frames: `event: snapshot|changed`, `id:` the position, `data:` the answer
/// (wrapped as `{"projection","user","answer"[,"challengeId"]}` on `/v1/watch`); while
/// idle, `event: progress` with the position the answers are known current at.
struct WatchFrames: SSESource {
    let watch: LedgerWatch
    let wrapped: Bool

    func next(idle: Duration) async throws -> ByteBuffer? {
        guard let first = try await watch.next(idle: idle) else { return nil }
        var buffer = ByteBuffer()
        frame(first, into: &buffer)
        // Updates already waiting go out in one write.
        while buffer.readableBytes < 64 * 1024, let u = try await watch.next(idle: .zero) { frame(u, into: &buffer) }
        return buffer
    }

    func frame(_ u: WatchUpdate, into buffer: inout ByteBuffer) {
        var data = u.answer.json
        if wrapped {
            var m: [(String, JSON)] = [("projection", .string(u.target.projection.rawValue)), ("user", .string(u.target.user))]
            if let id = u.target.challengeId { m.append(("challengeId", .string(id))) }
            m.append(("answer", data))
            data = .object(m)
        }
        buffer.writeString("id: \(u.position)\nevent: \(u.kind.rawValue)\ndata: " + data.serialized() + "\n\n")
    }

    func idleFrame() -> ByteBuffer {
        // An update waiting to be taken: a heartbeat now, the update at the next turn.
        guard let p = watch.progress() else { return ByteBuffer(string: ": heartbeat\n\n") }
        return ByteBuffer(string: "id: \(p)\nevent: progress\ndata: {\"position\":\(p)}\n\n")
    }
}
