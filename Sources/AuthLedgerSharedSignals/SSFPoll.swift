import AuthLedger
import Foundation

/// Poll delivery (RFC 8936): `POST /ssf/poll/{stream_id}` with
/// `{"maxEvents"?, "returnImmediately"?, "ack"?, "setErrs"?}` answers
/// `{"sets": {jti: SET, …}, "moreAvailable"}`.
///
/// Acknowledgements (and `setErrs`, which are recorded) come first; then the oldest
/// unacknowledged SETs are returned, pending verification events ahead of the
/// ledger's, in `seq` order — again on the next poll until acknowledged. The
/// stream's checkpoint moves over every acknowledged `seq` without a gap, so a
/// restart resends exactly what was not acknowledged. Without `returnImmediately`
/// an empty answer waits (up to `pollWait`) for the next SET.
extension SharedSignals {
    struct PollRequest {
        var maxEvents: Int?
        var returnImmediately = false
        var ack: [String] = []
        var setErrs: [(jti: String, err: String, description: String?)] = []
    }

    static func parsePoll(_ body: JSON?) throws -> PollRequest {
        var p = PollRequest()
        guard let body else { return p }
        guard case let .object(list) = body else { throw LedgerError.invalid("the body must be a JSON object") }
        for (k, v) in list {
            switch k {
            case "maxEvents":
                // RFC 8936 2.4: a maximum; the transmitter may return fewer (at most maxPollEvents).
                guard let n = v.integralValue, n >= 0 else {
                    throw LedgerError.invalid("maxEvents must be a non-negative integer", field: "maxEvents")
                }
                p.maxEvents = Int(n)
            case "returnImmediately":
                guard let b = v.boolValue else { throw LedgerError.invalid("returnImmediately must be a boolean", field: "returnImmediately") }
                p.returnImmediately = b
            case "ack":
                guard let items = v.arrayValue, items.count <= 100_000 else {
                    throw LedgerError.invalid("ack must be an array of jti strings", field: "ack")
                }
                p.ack = try items.map { item in
                    guard let s = item.stringValue, s.unicodeScalars.count <= 256 else { throw LedgerError.invalid("ack must be an array of jti strings", field: "ack") }
                    return s
                }
            case "setErrs":
                guard let members = v.objectValue, members.count <= 100_000 else {
                    throw LedgerError.invalid("setErrs must be an object of jti: {\"err\", \"description\"}", field: "setErrs")
                }
                for (jti, e) in members {
                    guard jti.unicodeScalars.count <= 256, let err = e["err"]?.stringValue, err.unicodeScalars.count <= 256,
                          e["description"].map({ $0.stringValue != nil }) ?? true else {
                        throw LedgerError.invalid("setErrs must be an object of jti: {\"err\", \"description\"}", field: "setErrs")
                    }
                    let d = e["description"]?.stringValue.map { String($0.prefix(1024)) }
                    p.setErrs.append((jti, err, d))
                }
            default:
                throw LedgerError.invalid("unknown field \"\(EventDecoder.clip(k))\"", field: k)
            }
        }
        return p
    }

    package func poll(streamId raw: String, body: JSON?) async throws -> JSON {
        let issuer = try requireIssuer()
        let id = try SharedSignals.checkStreamId(raw)
        let req = try SharedSignals.parsePoll(body)
        guard let initial = try await store.get(id) else { throw LedgerError(.notFound, "no stream \(id)", field: "stream_id") }
        // A push stream's configuration names no poll endpoint: there is none to call.
        guard initial.method == .poll else { throw LedgerError(.notFound, "stream \(id) is delivered by push: it has no poll endpoint", field: "stream_id") }

        if !req.ack.isEmpty || !req.setErrs.isEmpty { try await acknowledge(id, req) }
        let limit = min(req.maxEvents ?? 100, configuration.maxPollEvents)
        if req.maxEvents == 0 { return .object([("sets", .object([])), ("moreAvailable", .bool(false))]) }

        let deadline = ContinuousClock.now.advanced(by: req.returnImmediately ? .zero : configuration.pollWait)
        while true {
            let head = try await ledger.head().seq
            guard let s = try await store.get(id) else { throw LedgerError(.notFound, "no stream \(id)", field: "stream_id") }
            var claims: [JSON] = []
            var more = false
            if s.status == .enabled {
                for v in s.verifications.prefix(limit) { claims.append(verificationClaims(s, v, issuer: issuer)) }
                more = s.verifications.count > limit
                if claims.count < limit {
                    let acked = Set(s.acked)
                    var it = try await ledger.events(from: s.cursor + 1, filter: s.filter).makeAsyncIterator()
                    while let e = try await it.next(idle: .zero) {
                        if acked.contains(e.seq) { continue }
                        guard let c = self.claims(s, e, issuer: issuer) else { continue }
                        if claims.count == limit { more = true; break }
                        claims.append(c)
                    }
                }
            }
            if !claims.isEmpty || ContinuousClock.now >= deadline || Task.isCancelled {
                let sets = try await sign(claims)
                return .object([
                    ("sets", .object(zip(claims, sets).map { c, jwt in (c["jti"]!.stringValue!, JSON.string(jwt)) })),
                    ("moreAvailable", .bool(more)),
                ])
            }
            // Nothing yet: wait for a commit (or a verification request), then look again.
            var live = try await ledger.events(from: head + 1, filter: .all).makeAsyncIterator()
            let remaining = ContinuousClock.now.duration(to: deadline)
            _ = try await live.next(idle: min(remaining, .milliseconds(500)))
        }
    }

    /// Records acks and `setErrs`, then moves the checkpoint over every acknowledged `seq`.
    func acknowledge(_ id: String, _ req: PollRequest) async throws {
        let at = clock().formatted
        let head = try await ledger.head().seq
        let s = try await store.update(id) { s in
            var acked = Set(s.acked)
            func take(_ jti: String) {
                switch s.target(ofJTI: jti) {
                case let .event(seq)?: if seq > s.cursor, seq <= head { acked.insert(seq) }
                case let .verification(n)?: s.verifications.removeAll { $0.n == n }
                case nil: break
                }
            }
            for jti in req.ack { take(jti) }
            for e in req.setErrs {
                take(e.jti)
                var m: [(String, JSON)] = [("at", .string(at)), ("jti", .string(e.jti)), ("err", .string(e.err))]
                if let d = e.description { m.append(("description", .string(d))) }
                s.record(error: .object(m))
            }
            s.delivered += UInt64(acked.count - s.acked.count)
            s.acked = acked.sorted()
        }
        try await compact(s)
    }

    /// Moves the checkpoint over the acknowledged `seq`s that follow it without an
    /// unacknowledged SET in between.
    func compact(_ s: SSFStream) async throws {
        guard let highest = s.acked.last else { return }
        let acked = Set(s.acked)
        var cursor = s.cursor
        var it = try await ledger.events(from: s.cursor + 1, filter: s.filter).makeAsyncIterator()
        while let e = try await it.next(idle: .zero), e.seq <= highest {
            guard acked.contains(e.seq) || SSFEventMapping.map(e) == nil else { break }
            cursor = e.seq
        }
        guard cursor > s.cursor else { return }
        let (from, to) = (s.cursor, cursor)
        try await store.update(s.id) { t in
            guard t.cursor == from else { return }  // another poll moved it meanwhile
            t.cursor = to
            t.acked.removeAll { $0 <= to }
        }
    }
}
