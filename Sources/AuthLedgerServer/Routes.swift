import AuthLedger
import Foundation
import HTTPTypes
import Hummingbird
import NIOPosix

extension LedgerServer {
    /// Health, probes and metrics.
    func registerOperationRoutes(_ t: RouteFamily) {
        t.on(.get, "/health", .open) { [ledger, witnessCollector] _, _ in
            _ = try await ledger.head()
            var members: [(String, JSON)] = [("status", .string("ok"))]
            if let witnessCollector { members.append(("witnesses", try await witnessCollector.healthJSON())) }
            return JSONResponse.make(.object(members))
        }
        // Probes: the process answers (no storage touched); it should get traffic.
        t.on(.get, "/livez", .open) { _, _ in JSONResponse.make(.object([("status", .string("ok"))])) }
        t.on(.get, "/readyz", .open) { [ledger, readiness, configuration] _, _ in
            if readiness.isDraining {
                return JSONResponse.make(.object([("status", .string("draining"))]), status: .serviceUnavailable)
            }
            guard await readiness.storeAnswers(ledger, within: configuration.readinessTimeout) else {
                return JSONResponse.make(.object([("status", .string("unavailable")),
                                                  ("reason", .string("the store did not answer within \(configuration.readinessTimeout)"))]),
                                         status: .serviceUnavailable)
            }
            return JSONResponse.make(.object([("status", .string("ready"))]))
        }
        t.on(.get, "/metrics", .authenticated) { [metrics, scrapeGauges, ledger, sharedSignals] _, _ in
            await scrapeGauges.refresh(ledger, sharedSignals, watching: metrics.openSubscribers)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
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

    func subscription(_ ctx: ServerRequestContext) async throws -> DurableSubscription {
        let name = try param(ctx, "name")
        guard let s = try await ledger.subscription(named: name, owner: try subscriptionOwner(ctx).restrictTo) else { throw LedgerError(.notFound, "no subscription \(name)", field: "name") }
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
    func resumePosition(after last: UInt64) async throws -> UInt64 {
        let head = try await ledger.head().seq
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

/// Runs blocking work (a full `verify` on LMDB) on NIO's pool of threads for blocking work,
/// off the event loops and the cooperative pool: a request starts no thread (the
/// verifications at once are bounded by ``ServerConfiguration/maxConcurrentVerifies``).
struct ThreadPoolRunner: BlockingWorkRunner {
    /// The pool (by default the process's, `NIOThreadPool.singleton`).
    let pool: NIOThreadPool

    init(pool: NIOThreadPool = .singleton) {
        self.pool = pool
    }

    /// Runs `body` on a thread of `pool`; throws if the pool was shut down.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }
}
