import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird

extension AuthLedgerServer {
    func registerRoutes(_ t: RouteTable) {
        // Operations
        on(t, .get, "/health", .open) { [ledger] _, _ in
            _ = try ledger.head()
            return JSONResponse.make(.object([("status", .string("ok"))]))
        }
        on(t, .get, "/metrics", .authenticated) { [metrics] _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
        }

        // Queries (SPEC 3)
        on(t, .get, "/v1/users/{user}/devices", .scope(.read)) { [self] req, ctx in
            JSONResponse.make(try ledger.devices(try user(ctx), try queryOptions(req)))
        }
        on(t, .get, "/v1/users/{user}/cooling", .scope(.read)) { [self] req, ctx in
            JSONResponse.make(try ledger.cooling(try user(ctx), try queryOptions(req)))
        }
        on(t, .get, "/v1/users/{user}/pending", .scope(.read)) { [self] req, ctx in
            JSONResponse.make(try ledger.pending(try user(ctx), try queryOptions(req)))
        }
        registerHistoryRoute(t)
        on(t, .get, "/v1/users/{user}/challenges/{challengeId}", .scope(.read)) { [self] req, ctx in
            let id = try param(ctx, "challengeId")
            return JSONResponse.make(try ledger.challenge(try user(ctx), id, try queryOptions(req)))
        }

        // Commands (SPEC 2, 4)
        on(t, .post, "/v1/users/{user}/devices", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["deviceId", "name", "kind", "platform", "appId", "pushToken", "binding", "via", "grantId", "challengeId", "actor"])
            // Admin registration needs no proof: it is the admin's (SPEC 5).
            if try b.string("via") == "admin" { try require(.admin, ctx, for: "registering via admin") }
            return try await perform(.register(
                user: try user(ctx), deviceId: try b.requiredString("deviceId"), name: try b.requiredString("name", raw: true),
                kind: try b.string("kind") ?? Command.Default.kind, platform: try b.string("platform"), appId: try b.string("appId"),
                pushToken: try b.string("pushToken"), binding: try b.string("binding") ?? Command.Default.binding, via: try b.string("via"),
                grantId: try b.string("grantId"), challengeId: try b.string("challengeId")), b, status: .created)
        }
        on(t, .patch, "/v1/users/{user}/devices/{deviceId}", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["name", "pushToken", "actor"])
            let (u, d) = (try user(ctx), try param(ctx, "deviceId"))
            switch (b.has("name"), b.has("pushToken")) {
            case (true, false): return try await perform(.rename(user: u, deviceId: d, name: try b.requiredString("name", raw: true)), b)
            case (false, true): return try await perform(.updatePushToken(user: u, deviceId: d, pushToken: try b.requiredString("pushToken")), b)
            default: throw LedgerError.invalid("give either \"name\" (rename) or \"pushToken\"", field: "name")
            }
        }
        on(t, .delete, "/v1/users/{user}/devices/{deviceId}", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["reason", "actor"], optional: true)
            return try await perform(.revoke(user: try user(ctx), deviceId: try param(ctx, "deviceId"), reason: try b.string("reason")), b)
        }
        on(t, .delete, "/v1/users/{user}/devices", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["reason", "actor"], optional: true)
            return try await perform(.revokeAll(user: try user(ctx), reason: try b.string("reason")), b)
        }
        on(t, .post, "/v1/users/{user}/devices/{deviceId}/access", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["actor"], optional: true)
            return try await perform(.access(user: try user(ctx), deviceId: try param(ctx, "deviceId")), b)
        }
        on(t, .post, "/v1/users/{user}/verification-requests", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["deviceId", "name", "kind", "platform", "actor"])
            return try await perform(.requestVerification(
                user: try user(ctx), deviceId: try b.requiredString("deviceId"), name: try b.string("name", raw: true),
                kind: try b.string("kind"), platform: try b.string("platform")), b, status: .created)
        }
        on(t, .post, "/v1/users/{user}/challenges", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["requestingDeviceId", "action", "context", "actor"])
            return try await perform(.issueChallenge(
                user: try user(ctx), requestingDeviceId: try b.requiredString("requestingDeviceId"),
                action: try b.string("action") ?? Command.Default.action, context: try b.stringMap("context")), b, status: .created)
        }
        on(t, .post, "/v1/users/{user}/challenges/{challengeId}/approve", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["deviceId", "userVerified", "actor"])
            return try await perform(.approve(user: try user(ctx), challengeId: try param(ctx, "challengeId"),
                                              deviceId: try b.requiredString("deviceId"), userVerified: try b.bool("userVerified")), b)
        }
        on(t, .post, "/v1/users/{user}/challenges/{challengeId}/deny", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["deviceId", "actor"])
            return try await perform(.deny(user: try user(ctx), challengeId: try param(ctx, "challengeId"),
                                           deviceId: try b.requiredString("deviceId")), b)
        }
        on(t, .post, "/v1/users/{user}/otps", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["channel", "target", "actor"])
            return try await perform(.sendOTP(user: try user(ctx), channel: try b.requiredString("channel"),
                                              target: try b.requiredString("target")), b, status: .created)
        }
        on(t, .post, "/v1/users/{user}/otps/{otpId}/verify", .scope(.write)) { [self] req, ctx in
            let b = try await body(req, ["code", "actor"])
            return try await perform(.verifyOTP(user: try user(ctx), otpId: try param(ctx, "otpId"), code: try b.requiredString("code")), b)
        }
        on(t, .put, "/v1/policy", .scope(.admin)) { [self] req, _ in
            let b = try await body(req, ["coolingSeconds", "challengeTtlSeconds", "otpTtlSeconds", "otpMaxAttempts", "otpPerHour",
                                         "grantTtlSeconds", "maxDevices", "protectCurrentDevice", "actor"])
            let data: EventData
            do {
                data = try EventDecoder.decodeData(b.object(excluding: ["actor"]), type: .policySet)
            } catch {
                throw error.withoutDataPrefix
            }
            return try await perform(.setPolicy(data), b)
        }

        // The log
        // Raw events can carry any proof event (otp.verified, challenge.approved): `import`, not `write`.
        on(t, .post, "/v1/events", .scope(.import)) { [self] req, _ in try await appendEvents(req) }
        on(t, .get, "/v1/events", .scope(.read)) { [self] req, ctx in
            let q = req.uri.queryParameters
            var filter = EventFilter()
            if let u = q.get("user"), !u.isEmpty {
                try EventDecoder.checkUser(u)
                filter.user = u
            }
            if let types = q.get("types") { filter.types = try EventFilter.parseTypes(types) }
            var start: UInt64?
            if let last = try lastEventID(req) {
                start = try resumePosition(after: last)
            } else if let from = q.get("from") {
                guard let v = UInt64(positionText: from) else { throw LedgerError.invalid("from must be a seq (a non-negative integer)", field: "from") }
                // A position past the head is a client of another (or a restored) store: say so.
                let head = try ledger.head().seq
                guard v <= head + 1 else { throw LedgerError.invalid("from \(v) is beyond the head (\(head)) + 1", field: "from") }
                start = v
            }
            let slot = try subscriberSlot(ctx)
            let feed = try ledger.events(from: start, filter: filter, pollInterval: configuration.pollInterval)
            return eventStream(feed, context: ctx, slot: slot)
        }
        on(t, .get, "/v1/export", .scope(.audit)) { [self] req, _ in try export(req) }
        on(t, .get, "/v1/verify", .scope(.audit)) { [ledger, verifySlots] _, _ in
            // A full verify reads the whole log: a few at a time, the others are told to come back.
            guard verifySlots.tryAcquire() else {
                throw LedgerError(.rateLimited, "\(verifySlots.limit) verifications are running; retry later")
            }
            defer { verifySlots.release() }
            let head = try await offload { try ledger.verify() }
            return JSONResponse.make(.object([
                ("ok", .bool(true)),
                ("head", .object([("seq", .int(Int64(head.seq))), ("hash", .string(head.hash.description))])),
            ]))
        }

        // Durable subscriptions
        on(t, .put, "/v1/subscriptions/{name}", .scope(.read)) { [self] req, ctx in
            let b = try await body(req, ["user", "types", "from"], optional: true)
            var filter = EventFilter()
            if let u = try b.string("user") {
                try EventDecoder.checkUser(u)
                filter.user = u
            }
            filter.types = try types(b)
            let owner = try subscriptionOwner(ctx)
            let (s, created) = try await ledger.putSubscription(name: try param(ctx, "name"), filter: filter, from: try b.position("from"),
                                                                owner: owner.restrictTo, createdBy: owner.key)
            return JSONResponse.make(s.json, status: created ? .created : .ok)
        }
        on(t, .get, "/v1/subscriptions/{name}", .scope(.read)) { [self] _, ctx in
            JSONResponse.make(try subscription(ctx).json)
        }
        on(t, .delete, "/v1/subscriptions/{name}", .scope(.read)) { [self] _, ctx in
            let name = try param(ctx, "name")
            guard try await ledger.deleteSubscription(named: name, owner: try subscriptionOwner(ctx).restrictTo) else { throw LedgerError(.notFound, "no subscription \(name)", field: "name") }
            return Response(status: .noContent)
        }
        on(t, .get, "/v1/subscriptions/{name}/events", .scope(.read)) { [self] req, ctx in
            let s = try subscription(ctx)
            let start = try lastEventID(req).map { try resumePosition(after: $0) } ?? s.checkpoint + 1
            let slot = try subscriberSlot(ctx)
            let feed = try ledger.events(from: start, filter: s.filter, pollInterval: configuration.pollInterval)
            return eventStream(feed, context: ctx, slot: slot)
        }
        on(t, .post, "/v1/subscriptions/{name}/ack", .scope(.read)) { [self] req, ctx in
            let b = try await body(req, ["seq"])
            guard let seq = try b.position("seq", required: true) else { throw LedgerError.invalid("missing field \"seq\"", field: "seq") }
            return JSONResponse.make(try await ledger.acknowledge(subscription: try param(ctx, "name"), through: seq,
                                                                  owner: try subscriptionOwner(ctx).restrictTo).json)
        }
    }

    // MARK: Pieces

    func param(_ ctx: ServerRequestContext, _ name: String) throws(LedgerError) -> String {
        guard let raw = ctx.parameters.get(name), let value = percentDecoded(raw) else {
            throw LedgerError.invalid("bad path parameter \(name)", field: name)
        }
        if name == "name" {
            try DurableSubscription.checkName(value)
        } else {
            try EventDecoder.checkId(value, name)
        }
        return value
    }

    func user(_ ctx: ServerRequestContext) throws(LedgerError) -> String {
        let u = try param(ctx, "user")
        try EventDecoder.checkUser(u)
        return u
    }

    func subscription(_ ctx: ServerRequestContext) throws -> DurableSubscription {
        let name = try param(ctx, "name")
        guard let s = try ledger.subscription(named: name, owner: try subscriptionOwner(ctx).restrictTo) else { throw LedgerError(.notFound, "no subscription \(name)", field: "name") }
        return s
    }

    func body(_ req: Request, _ allowed: Set<String>, optional: Bool = false) async throws -> RequestBody {
        try await RequestBody.read(req, limit: configuration.maxBodyBytes, allowed: allowed, optional: optional)
    }

    /// `types` of a subscription: an array of type names or a comma-separated string.
    func types(_ b: RequestBody) throws -> Set<EventType>? {
        if let text = try? b.string("types") { return try EventFilter.parseTypes(text) }
        guard b.has("types") else { return nil }
        let j = b.object(excluding: [])["types"]
        guard let items = j?.arrayValue else { throw LedgerError.invalid("\"types\" must be an array of event types", field: "types") }
        let names = try items.map { item -> String in
            guard let s = item.stringValue else { throw LedgerError.invalid("\"types\" must be an array of event types", field: "types") }
            return s
        }
        return try EventFilter.parseTypes(names.joined(separator: ","))
    }

    /// `?at=&asOf=&current=&includeRevoked=&view=` (defaults: head, the server clock).
    func queryOptions(_ req: Request) throws(LedgerError) -> QueryOptions {
        let q = req.uri.queryParameters
        var o = QueryOptions(asOf: configuration.clock())
        if let at = q.get("at") {
            guard let v = UInt64(positionText: at) else { throw LedgerError.invalid("at must be a seq (a non-negative integer)", field: "at") }
            o.position = v
        }
        if let asOf = q.get("asOf") {
            guard let t = Timestamp(callerTime: asOf) else {
                throw LedgerError.invalid("asOf must be an RFC 3339 time with a zone, from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z", field: "asOf")
            }
            o.asOf = t
        }
        if let current = q.get("current") {
            try EventDecoder.checkId(current, "current")
            o.current = current
        }
        if let v = q.get("includeRevoked") { o.includeRevoked = try flag(v, "includeRevoked") }
        if let v = q.get("fromScratch") { o.fromScratch = try flag(v, "fromScratch") }
        if let view = q.get("view") {
            switch view {
            case "requester": o.asRequester = true
            case "owner", "auditor": o.asRequester = false
            default: throw LedgerError.invalid("view must be requester or owner", field: "view")
            }
        }
        return o
    }

    func flag(_ v: String, _ name: String) throws(LedgerError) -> Bool {
        switch v {
        case "", "true", "1": return true
        case "false", "0": return false
        default: throw LedgerError.invalid("\(name) must be true or false", field: name)
        }
    }

    /// The first seq to deliver after `Last-Event-ID: last`: `last` must be a position of
    /// this log (at most the head), so `last + 1` cannot overflow.
    func resumePosition(after last: UInt64) throws -> UInt64 {
        let head = try ledger.head().seq
        guard last <= head else { throw LedgerError.invalid("Last-Event-ID \(last) is beyond the head (\(head))", field: "Last-Event-ID") }
        return last + 1
    }

    /// The caller's key as a subscription owner, and the owner to restrict to (nil for
    /// `admin`, who sees every subscription; SPEC 5).
    func subscriptionOwner(_ ctx: ServerRequestContext) throws -> (key: String, restrictTo: String?) {
        let digest = ctx.caller?.digest ?? []
        let key = try ledger.secrets().keyedDigest("authledger subscription owner", digest)
        return (key, ctx.scopes.contains(.admin) ? nil : key)
    }

    func lastEventID(_ req: Request) throws(LedgerError) -> UInt64? {
        guard let raw = req.headers[HTTPField.Name("Last-Event-ID")!] else { return nil }
        let text = raw.trimmingWhitespace()
        if text.isEmpty { return nil }
        guard let v = UInt64(positionText: text) else { throw LedgerError.invalid("Last-Event-ID must be a seq (digits only)", field: "Last-Event-ID") }
        return v
    }

    /// Executes `command` on the writer thread at the server's clock, as the CLI does.
    func perform(_ command: Command, _ b: RequestBody, status: HTTPResponse.Status = .ok) async throws -> Response {
        let meta = try b.meta()
        let start = ContinuousClock().now
        let result: CommandResult
        do {
            result = try await ledger.perform(command, meta: meta, clock: configuration.clock)
        } catch let e as LedgerError {
            throw e.withoutDataPrefix
        }
        metrics.appended(result.events.count, since: start)
        if let refusal = result.refusal { throw refusal }
        return JSONResponse.make(result.json, status: status)
    }

    /// `POST /v1/events`: a JSON array of events, or `{"events": […], "expectedVersion": {stream: version}}`;
    /// an event may also carry its own `expectedVersion` (its stream's version before the request).
    func appendEvents(_ req: Request) async throws -> Response {
        guard let json = try await RequestBody.readJSON(req, limit: configuration.maxAppendBytes, optional: false) else {
            throw LedgerError.invalid("a JSON array of events is required")
        }
        var items: [JSON]
        var expected: [String: UInt64] = [:]
        switch json {
        case let .array(a):
            items = a
        case let .object(members):
            var events: [JSON]?
            for (k, v) in members {
                switch k {
                case "events":
                    guard let a = v.arrayValue else { throw LedgerError.invalid("\"events\" must be an array", field: "events") }
                    events = a
                case "expectedVersion":
                    guard let m = v.objectValue else { throw LedgerError.invalid("\"expectedVersion\" must be an object of stream versions", field: "expectedVersion") }
                    for (stream, version) in m {
                        try AppendRequest.checkStreamKey(stream)
                        guard let n = version.integralValue, n >= 0 else {
                            throw LedgerError.invalid("\"expectedVersion.\(RequestBody.clip(stream))\" must be a non-negative integer", field: "expectedVersion")
                        }
                        expected[stream] = UInt64(n)
                    }
                default:
                    throw LedgerError.invalid("unknown field \"\(RequestBody.clip(k))\"", field: k)
                }
            }
            guard let events else { throw LedgerError.invalid("missing field \"events\"", field: "events") }
            items = events
        default:
            throw LedgerError.invalid("the body must be a JSON array of events")
        }
        guard !items.isEmpty else { throw LedgerError.invalid("no events to append", field: "events") }
        guard items.count <= configuration.maxAppendEvents else {
            throw LedgerError(.payloadTooLarge, "at most \(configuration.maxAppendEvents) events per request")
        }
        var inputs: [EventInput] = []
        inputs.reserveCapacity(items.count)
        for (index, var item) in items.enumerated() {
            do {
                if case let .object(members) = item, let k = members.firstIndex(where: { $0.0 == "expectedVersion" }) {
                    guard let n = members[k].1.integralValue, n >= 0 else {
                        throw LedgerError.invalid("\"expectedVersion\" must be a non-negative integer", field: "expectedVersion")
                    }
                    var rest = members
                    rest.remove(at: k)
                    item = .object(rest)
                    let stream = item["user"]?.stringValue ?? "$system"
                    if let other = expected[stream], other != UInt64(n) {
                        throw LedgerError.invalid("two expected versions for stream \(RequestBody.clip(stream))", field: "expectedVersion")
                    }
                    expected[stream] = UInt64(n)
                }
                inputs.append(try EventDecoder.decode(item))
            } catch var e as LedgerError {
                e.index = index
                throw e
            }
        }
        // Policy is the admin's, whichever route appends it.
        if inputs.contains(where: { $0.event.type == .policySet }) { try authorize(req, .scope(.admin)) }
        let start = ContinuousClock().now
        let outcome = try await ledger.submit(AppendRequest(inputs, expectedVersions: expected))
        metrics.appended(outcome.appended.count, since: start)
        return JSONResponse.make(.object([
            ("appended", .int(Int64(outcome.appended.count))),
            ("duplicates", .int(Int64(outcome.duplicates))),
            ("events", .array(outcome.appended.map { .object([("seq", .int(Int64($0.seq))), ("id", .string($0.id.description)), ("type", .string($0.event.type.name))]) })),
            ("head", .object([("seq", .int(Int64(outcome.head.seq))), ("hash", .string(outcome.head.hash.description))])),
        ]), status: outcome.appended.isEmpty ? .ok : .created)
    }

    /// `GET /v1/export?user=&from=`: recorded JSONL up to the head at the time of the request.
    func export(_ req: Request) throws -> Response {
        let q = req.uri.queryParameters
        var user: String?
        if let u = q.get("user"), !u.isEmpty {
            try EventDecoder.checkUser(u)
            user = u
        }
        var from: UInt64 = 1
        if let f = q.get("from") {
            guard let v = UInt64(positionText: f) else { throw LedgerError.invalid("from must be a seq (a non-negative integer)", field: "from") }
            from = max(v, 1)
        }
        let through = try ledger.head().seq
        // The feed reads a page per read transaction (a user's events by their stream
        // index); nothing is held across a write to the client.
        let feed = try ledger.events(from: from, filter: EventFilter(user: user))
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: .init { writer in
            var it = feed.makeAsyncIterator()
            var buffer = ByteBuffer()
            while let e = try await it.next(idle: .zero), e.seq <= through {
                buffer.writeString(e.json.serialized())
                buffer.writeInteger(UInt8(10))
                if buffer.readableBytes >= 256 * 1024 {
                    try await writer.write(buffer)
                    buffer.clear()
                }
            }
            if buffer.readableBytes > 0 { try await writer.write(buffer) }
            try await writer.finish(nil)
        })
    }
}

extension LedgerError {
    /// Command fields are body members, not `data.` paths.
    var withoutDataPrefix: LedgerError {
        var e = self
        if let f = field, f.hasPrefix("data.") { e.field = String(f.dropFirst(5)) }
        return e
    }
}

extension Error {
    var withoutDataPrefix: Error { (self as? LedgerError)?.withoutDataPrefix ?? self }
}

/// Decodes `%XX` escapes of a path component (the router leaves them); nil when malformed.
func percentDecoded(_ s: String) -> String? {
    guard s.contains("%") else { return s }
    var out: [UInt8] = []
    var bytes = Array(s.utf8)[...]
    while let c = bytes.popFirst() {
        if c == UInt8(ascii: "%") {
            guard bytes.count >= 2 else { return nil }
            let h = bytes.popFirst()!, l = bytes.popFirst()!
            guard let hi = hexValue(h), let lo = hexValue(l) else { return nil }
            out.append(hi << 4 | lo)
        } else {
            out.append(c)
        }
    }
    return String(validating: out, as: UTF8.self)
}

/// Runs blocking work (a full `verify`) on its own thread, off the event loops and
/// the cooperative pool.
func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, Error>) in
        let t = Thread { c.resume(with: Result { try body() }) }
        t.name = "authledger-offload"
        t.start()
    }
}
