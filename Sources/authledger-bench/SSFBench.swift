import AuthLedger
import AuthLedgerLMDB
import AuthLedgerServer
import AuthLedgerSharedSignals
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// `authledger bench-ssf`: how fast SETs are signed and delivered, in one run over a
/// temporary store, with a loopback push receiver in the same process.
///
/// - `sign`: SETs signed per second (RS256, the key pool) from ledger events;
/// - `push`: `events` ledger events appended at `rate` per second while a push stream
///   delivers them; SETs delivered per second over the run and the lag from append
///   to receipt (p50, p99, max);
/// - `poll`: the same events fetched and acknowledged by a poll stream
///   (`maxEvents` 1000 per request);
/// - `append_with_dead_receiver`: appends per second as fast as possible, first with
///   no stream and then with a push stream whose receiver is down (the ratio shows
///   that a dead receiver does not slow appends).
enum SSFBench {
    /// Runs the Shared Signals benchmark: `events` events appended at `rate` per second, delivered to a push receiver; the figures as JSON.
    static func run(events: Int, rate: Int) async throws -> JSON {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("authledger-ssf-bench-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var logger = Logger(label: "authledger.bench")
        logger.logLevel = .error
        let ledger = try await Ledger(lmdb: dir)
        let bench = try await BenchServer.start(ledger, tokens: "bench-admin:admin") { config in
            config.maxSubscribersPerToken = nil
            config.pollInterval = .milliseconds(50)
            config.sharedSignals.retryInitial = .milliseconds(100)
            config.sharedSignals.retryMax = .milliseconds(500)
        }

        let receiver = Receiver()
        let (rports, rportsIn) = AsyncStream.makeStream(of: Int.self)
        let router = Router()
        router.post("/events") { req, _ -> Response in
            let body = try await req.body.collect(upTo: 64 * 1024)
            receiver.received(String(buffer: body))
            return Response(status: .accepted)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { ch in rportsIn.yield(ch.localAddress?.port ?? 0) }, logger: logger)
        let rgroup = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let rrunning = Task { try await rgroup.run() }
        var rit = rports.makeAsyncIterator()
        let rport = await rit.next() ?? 0

        let ssf = bench.server.sharedSignals
        var out: [(String, JSON)] = [("events", .int(Int64(events))), ("rate", .int(Int64(rate))),
                                     ("cores", .int(Int64(ProcessInfo.processInfo.activeProcessorCount)))]

        // Poll stream first, so that it covers the same events.
        let pollStream = try await ssf.createStream(.object([("delivery", .object([("method", .string("urn:ietf:rfc:8936"))]))]))
        let pushStream = try await ssf.createStream(.object([("delivery", .object([
            ("method", .string("urn:ietf:rfc:8935")), ("endpoint_url", .string("http://127.0.0.1:\(rport)/events")),
            ("authorization_header", .string("Bearer bench")),
        ]))]))
        _ = pushStream

        // Push: append at `rate`, every 10 ms a slice.
        let inputs = try benchEvents(events, base: Timestamp(rfc3339: "2026-03-01T09:00:00Z")!)
        let clock = ContinuousClock()
        let start = clock.now
        var appendedAt: [ContinuousClock.Instant] = []
        appendedAt.reserveCapacity(events)
        let perTick = rate > 0 ? max(1, rate / 100) : 500
        var i = 0
        var tick = 0
        while i < inputs.count {
            let slice = Array(inputs[i..<min(i + perTick, inputs.count)])
            _ = try await ledger.append(AppendRequest(slice))
            let now = clock.now
            for _ in slice { appendedAt.append(now) }
            i += slice.count
            tick += 1
            if rate > 0 {
                let due = start.advanced(by: .milliseconds(tick * 10))
                if due > clock.now { try await Task.sleep(until: due, clock: clock) }
            }
        }
        let appendDone = clock.now
        while receiver.count < events, clock.now - appendDone < .seconds(300) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let pushDone = receiver.lastAt ?? clock.now
        let times = receiver.times
        var lags: [Double] = []
        for (seq, t) in times where seq >= 1 && Int(seq) <= appendedAt.count {
            lags.append(seconds(t - appendedAt[Int(seq) - 1]) * 1000)
        }
        lags.sort()
        let pushSeconds = seconds(pushDone - start)
        out.append(("push", .object([
            ("delivered", .int(Int64(receiver.count))),
            ("append_seconds", .number(fmt(seconds(appendDone - start)))),
            ("sets_per_s", .number(fmt(Double(receiver.count) / pushSeconds))),
            ("lag_p50_ms", .number(fmt(pct(lags, 0.5)))),
            ("lag_p99_ms", .number(fmt(pct(lags, 0.99)))),
            ("lag_max_ms", .number(fmt(lags.last ?? 0))),
        ])))

        // Poll: fetch and acknowledge everything.
        let pollId = pollStream["stream_id"]!.stringValue!
        let pollStart = clock.now
        var acks: [String] = []
        var polled = 0
        while true {
            let body = JSON.object([("maxEvents", .int(1000)), ("returnImmediately", .bool(true)),
                                    ("ack", .array(acks.map { .string($0) }))])
            let answer = try await ssf.poll(streamId: pollId, body: body)
            let sets = answer["sets"]?.objectValue ?? []
            acks = sets.map(\.0)
            polled += sets.count
            if sets.isEmpty { break }
        }
        let pollSeconds = seconds(clock.now - pollStart)
        out.append(("poll", .object([("sets", .int(Int64(polled))), ("sets_per_s", .number(fmt(Double(polled) / pollSeconds)))])))

        // Signing alone.
        let sample = try await ledger.events(from: 1, limit: min(events, 4000))
        guard let s = try await ssf.store.get(pollId), let issuer = ssf.issuer else { throw LedgerError(.storageError, "bench stream vanished") }
        let claims = sample.compactMap { ssf.claims(s, $0, issuer: issuer) }
        let signStart = clock.now
        var k = 0
        while k < claims.count {
            _ = try await ssf.sign(Array(claims[k..<min(k + 64, claims.count)]))
            k += 64
        }
        out.append(("sign", .object([("sets", .int(Int64(claims.count))), ("sets_per_s", .number(fmt(Double(claims.count) / seconds(clock.now - signStart))))])))

        // Appends with a dead receiver: the same workload, with and without it.
        try await ssf.deleteStream(pushStream["stream_id"]!.stringValue!)
        try await ssf.deleteStream(pollId)
        let more = try benchEvents(events, base: Timestamp(rfc3339: "2026-03-02T09:00:00Z")!, prefix: "a")
        let baseline = try await appendAll(ledger, more)
        _ = try await ssf.createStream(.object([("delivery", .object([
            ("method", .string("urn:ietf:rfc:8935")), ("endpoint_url", .string("http://127.0.0.1:9/dead")),
        ]))]))
        let evenMore = try benchEvents(events, base: Timestamp(rfc3339: "2026-03-03T09:00:00Z")!, prefix: "b")
        let dead = try await appendAll(ledger, evenMore)
        out.append(("append_with_dead_receiver", .object([
            ("events_per_s_without_stream", .number(fmt(baseline))),
            ("events_per_s_with_dead_receiver", .number(fmt(dead))),
            ("ratio", .number(fmt(dead / baseline))),
        ])))

        await rgroup.triggerGracefulShutdown()
        _ = try? await rrunning.value
        await bench.stop()
        return .object(out)
    }

    static func appendAll(_ ledger: Ledger, _ inputs: [EventInput]) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        var i = 0
        while i < inputs.count {
            _ = try await ledger.append(AppendRequest(Array(inputs[i..<min(i + 100, inputs.count)])))
            i += 100
        }
        return Double(inputs.count) / seconds(clock.now - start)
    }

    /// `n` events that all become SETs: per user a registration, then push-token updates.
    static func benchEvents(_ n: Int, base: Timestamp, prefix: String = "u") throws -> [EventInput] {
        try (0..<n).map { k in
            let user = "\(prefix)\(k / 10)"
            let at = base.adding(seconds: Int64(k / 10)).formatted
            let j: JSON = k % 10 == 0
                ? .object([("type", .string("device.registered")), ("user", .string(user)), ("at", .string(at)),
                           ("data", .object([("deviceId", .string("d")), ("name", .string("Bench device")), ("kind", .string("mobile")),
                                             ("binding", .string("permanent")), ("via", .string("initial"))])),
                           ("meta", .object([("actor", .string("user"))]))])
                : .object([("type", .string("device.push_token_updated")), ("user", .string(user)), ("at", .string(at)),
                           ("data", .object([("deviceId", .string("d")), ("pushToken", .string("t\(k)"))]))])
            return try EventDecoder.decode(j)
        }
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    static func pct(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    static func fmt(_ x: Double) -> String { x.isFinite ? String(format: "%.1f", x) : "0" }

    /// Counts SETs by the `seq` in their `jti` (first receipt only).
    final class Receiver: Sendable {
        private struct Receipts {
            var seen: [UInt64: ContinuousClock.Instant] = [:]
            var last: ContinuousClock.Instant?
        }
        private let receipts = Mutex(Receipts())

        func received(_ jwt: String) {
            let now = ContinuousClock.now
            let parts = jwt.split(separator: ".")
            guard parts.count == 3, let payload = Data(base64urlText: String(parts[1])),
                  let j = try? JSON.parse(Array(payload)), let jti = j["jti"]?.stringValue,
                  let seq = jti.split(separator: "-").last.flatMap({ UInt64($0) }) else { return }
            receipts.withLock { r in
                if r.seen[seq] == nil { r.seen[seq] = now }
                r.last = now
            }
        }

        var count: Int { receipts.withLock { $0.seen.count } }
        var lastAt: ContinuousClock.Instant? { receipts.withLock { $0.last } }
        var times: [(UInt64, ContinuousClock.Instant)] { receipts.withLock { $0.seen.map { ($0.key, $0.value) } } }
    }
}

extension Data {
    init?(base64urlText s: String) {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        self.init(base64Encoded: t)
    }
}
