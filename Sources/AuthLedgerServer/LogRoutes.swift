import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird

extension LedgerServer {
    /// The policy and the log itself: raw appends, the live feed, export, verification.
    func registerLogRoutes(_ t: RouteFamily) {
        t.on(.put, "/v1/policy", .scope(.admin)) { [self] req, _ in
            let b = try await body(req, ["coolingSeconds", "challengeTtlSeconds", "otpTtlSeconds", "otpMaxAttempts", "otpPerHour",
                                         "grantTtlSeconds", "maxDevices", "protectCurrentDevice", "requireSignedApprovals",
                                         "verificationLinkTtlSeconds", "actor"])
            let data: EventData
            do {
                data = try EventDecoder.decodeData(b.object(excluding: ["actor"]), type: .policySet)
            } catch {
                throw error.withoutDataPrefix
            }
            return try await perform(.setPolicy(PolicySet(data)), b)
        }

        // The log
        // Raw events can carry any proof event (otp.verified, challenge.approved): `import`, not `write`.
        t.on(.post, "/v1/events", .scope(.import)) { [self] req, ctx in try await appendEvents(req, ctx) }
        t.on(.get, "/v1/events", .scope(.read)) { [self] req, ctx in
            let q = req.uri.queryParameters
            var filter = EventFilter()
            if let u = q.get("user"), !u.isEmpty {
                try EventDecoder.checkUser(u)
                filter.user = u
            }
            if let types = q.get("types") { filter.types = try EventFilter.parseTypes(types) }
            var start: UInt64?
            if let last = try lastEventID(req) {
                start = try await resumePosition(after: last)
            } else if let from = q.get("from") {
                guard let v = UInt64(positionText: from) else { throw LedgerError.invalid("from must be a seq (a non-negative integer)", field: "from") }
                // A position past the head is a client of another (or a restored) store: say so.
                let head = try await ledger.head().seq
                guard v <= head + 1 else { throw LedgerError.invalid("from \(v) is beyond the head (\(head)) + 1", field: "from") }
                start = v
            }
            let slot = try subscriberSlot(ctx)
            let feed = try await ledger.events(from: start, filter: filter, pollInterval: configuration.pollInterval)
            return eventStream(feed, context: ctx, slot: slot)
        }
        t.on(.get, "/v1/export", .scope(.audit)) { [self] req, _ in try await export(req) }
        t.on(.get, "/v1/verify", .scope(.audit)) { [ledger, verifySlots, runner = configuration.blockingWorkRunner] _, _ in
            // A full verify reads the whole log: a few at a time, the others are told to come back.
            guard verifySlots.tryAcquire() else {
                throw HTTPRefusal(.rateLimited, "\(verifySlots.limit) verifications are running; retry later")
            }
            defer { verifySlots.release() }
            // LMDB's checks block a thread for as long as they read: one of NIO's pool for blocking work, not a new one.
            let head = try await ledger.verify(on: runner)
            return JSONResponse.make(.object([
                ("ok", .bool(true)),
                ("head", .object([("seq", .int(Int64(head.seq))), ("hash", .string(head.hash.description))])),
            ]))
        }
    }

    /// `POST /v1/events`: a JSON array of events, or `{"events": […], "expectedVersion": {stream: version}}`;
    /// an event may also carry its own `expectedVersion` (its stream's version before the request).
    func appendEvents(_ req: Request, _ ctx: ServerRequestContext) async throws -> Response {
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
            throw HTTPRefusal(.payloadTooLarge, "at most \(configuration.maxAppendEvents) events per request")
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
                var input = try EventDecoder.decode(item)
                // The fixture form records who appended it here; the recorded form keeps its
                // meta (its hash covers it).
                if input.claims.hash == nil, let caller = Caller.current?.name {
                    var meta = input.event.meta ?? StringMap()
                    meta.pairs.removeAll { $0.key == "caller" }
                    meta.pairs.append((key: "caller", value: caller))
                    input.event.meta = meta
                }
                inputs.append(input)
            } catch var e as LedgerError {
                e.index = index
                throw e
            }
        }
        // Policy is the admin's, whichever route appends it.
        if inputs.contains(where: { $0.event.type == .policySet }) { try demand(.admin, of: ctx.scopes, for: "appending policy.set") }
        let start = ContinuousClock().now
        let outcome = try await ledger.append(AppendRequest(inputs, expectedVersions: expected))
        metrics.appended(outcome.appended.count, since: start)
        return JSONResponse.make(.object([
            ("appended", .int(Int64(outcome.appended.count))),
            ("duplicates", .int(Int64(outcome.duplicates))),
            ("events", .array(outcome.appended.map { .object([("seq", .int(Int64($0.seq))), ("id", .string($0.id.description)), ("type", .string($0.event.type.name))]) })),
            ("head", .object([("seq", .int(Int64(outcome.head.seq))), ("hash", .string(outcome.head.hash.description))])),
        ]), status: outcome.appended.isEmpty ? .ok : .created)
    }

    /// `GET /v1/export?user=&from=`: recorded JSONL up to the head at the time of the request.
    func export(_ req: Request) async throws -> Response {
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
        let through = try await ledger.head().seq
        // The feed reads a page per read transaction (a user's events by their stream
        // index); nothing is held across a write to the client.
        let feed = try await ledger.events(from: from, filter: EventFilter(user: user))
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
