import AsyncHTTPClient
import AuthLedger
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Push delivery (RFC 8935): one worker per enabled push stream POSTs each SET
/// (`Content-Type: application/secevent+jwt`, the stream's `Authorization` header)
/// to the receiver, in `seq` order, and moves on when it answers 202 Accepted — or
/// 400 with an error body (`{"err", "description"}`), which is recorded on the
/// stream: the receiver refuses that SET, and sending it again would not change
/// that. Anything else (no connection, a timeout, 5xx, 401…) is retried with
/// exponential backoff, the same SET, until the receiver takes it: at least once,
/// nothing skipped.
///
/// The worker reads the log like any feed subscriber (catch-up, then live), signs
/// the next SETs while the current ones are being sent, and writes its checkpoint
/// (`cursor`) at most every `checkpointInterval` and whenever it catches up: after a
/// crash it resends at most what it sent since, with the same `jti`s.
package final class SSFPushService: Service, Sendable {
    let signals: SharedSignals
    let logger: Logger
    let client: HTTPClient

    package init(signals: SharedSignals, logger: Logger) {
        self.signals = signals
        self.logger = logger
        var config = HTTPClient.Configuration()
        config.redirectConfiguration = .disallow
        config.timeout = .init(connect: .seconds(5), read: .seconds(Int64(signals.configuration.requestTimeout.components.seconds) + 1))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
    }

    package func run() async throws {
        // The issuer of a server on port 0 is known once it listens.
        while signals.issuer == nil {
            try await Task.sleep(for: .milliseconds(20))
        }
        await cancelWhenGracefulShutdown { [self] in
            await supervise()
        }
        try? await client.shutdown()
    }

    /// Starts a worker for each enabled push stream, restarts it when the stream's
    /// configuration changes, stops it when the stream goes.
    private func supervise() async {
        var workers: [String: (revision: Int, task: Task<Void, Never>)] = [:]
        defer { for w in workers.values { w.task.cancel() } }
        while !Task.isCancelled {
            do {
                let streams = try await signals.store.all().filter { $0.method == .push && $0.status == .enabled }
                let wanted = Dictionary(uniqueKeysWithValues: streams.map { ($0.id, $0.revision) })
                for (id, w) in workers where wanted[id] != w.revision {
                    w.task.cancel()
                    await w.task.value
                    workers[id] = nil
                }
                for s in streams where workers[s.id] == nil {
                    let id = s.id
                    workers[id] = (s.revision, Task { [self] in await work(id) })
                }
            } catch {
                logger.error("shared signals: cannot read the streams", metadata: ["error": "\(error)"])
            }
            await signals.changes.wait(timeout: .seconds(1))
        }
        for w in workers.values {
            w.task.cancel()
            await w.task.value
        }
        workers = [:]
    }

    /// One signed SET, ready to send.
    struct Outgoing: Sendable {
        var jti: String
        var seq: UInt64?
        var verification: Int?
        var jwt: String
    }

    /// Delivers stream `id` until cancelled.
    private func work(_ id: String) async {
        var backoff = signals.configuration.retryInitial
        while !Task.isCancelled {
            do {
                try await deliver(id)
                return
            } catch is CancellationError {
                return
            } catch {
                logger.warning("shared signals: push worker failed; restarting", metadata: ["stream": "\(id)", "error": "\(error)"])
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, signals.configuration.retryMax)
            }
        }
    }

    private func deliver(_ id: String) async throws {
        guard let s0 = try await signals.store.get(id), s0.method == .push, s0.status == .enabled,
              let url = s0.endpointURL else { return }
        let issuer = try signals.requireIssuer()
        let authorization = try s0.sealedAuthorization.map { try signals.secrets().open($0, stream: id) }
        var cursor = s0.cursor
        var savedCursor = cursor
        var deliveredSinceSave: UInt64 = 0
        var lastSave = ContinuousClock.now
        var feed = try await signals.ledger.events(from: cursor + 1, filter: s0.filter, pollInterval: .milliseconds(250)).makeAsyncIterator()

        func save(force: Bool) async throws {
            guard cursor > savedCursor || deliveredSinceSave > 0 else { return }
            guard force || ContinuousClock.now - lastSave >= signals.configuration.checkpointInterval else { return }
            let (c, n) = (cursor, deliveredSinceSave)
            try await signals.store.update(id) { s in
                s.cursor = max(s.cursor, c)
                s.delivered += n
            }
            savedCursor = cursor
            deliveredSinceSave = 0
            lastSave = .now
        }
        // The claims of the next SETs (up to 64 read from the log now, none when caught up).
        func readClaims(_ s: SSFStream) async throws -> [(claims: JSON, seq: UInt64)] {
            var out: [(claims: JSON, seq: UInt64)] = []
            while out.count < 64, let e = try await feed.next(idle: .zero) {
                if let c = signals.claims(s, e, issuer: issuer) { out.append((c, e.seq)) }
            }
            return out
        }
        func signing(_ claims: [(claims: JSON, seq: UInt64)]) -> Task<[Outgoing], Error> {
            let signals = self.signals
            return Task {
                let jwts = try await signals.sign(claims.map(\.claims))
                return zip(claims, jwts).map { c, jwt in Outgoing(jti: c.claims["jti"]!.stringValue!, seq: c.seq, jwt: jwt) }
            }
        }

        var next: Task<[Outgoing], Error>?
        defer { next?.cancel() }
        func loop() async throws {
            while !Task.isCancelled {
                // Verification events go ahead of the ledger's.
                let s = try await signals.store.get(id) ?? s0
                if !s.verifications.isEmpty {
                    for v in s.verifications {
                        let c = signals.verificationClaims(s, v, issuer: issuer)
                        let jwt = try await signals.sign([c])[0]
                        try await send(Outgoing(jti: c["jti"]!.stringValue!, verification: v.n, jwt: jwt), url: url, authorization: authorization, stream: id)
                        let n = v.n
                        try await signals.store.update(id) { s in s.verifications.removeAll { $0.n == n }; s.delivered += 1 }
                    }
                    continue
                }
                let current: Task<[Outgoing], Error>
                if let n = next { current = n } else { current = signing(try await readClaims(s)) }
                next = nil
                let batch = try await current.value
                if batch.isEmpty {
                    try await save(force: true)
                    // Caught up: wait for the next commit (or a verification request, or a change).
                    if let e = try await feed.next(idle: .milliseconds(500)) {
                        if let c = signals.claims(s, e, issuer: issuer) { next = signing([(c, e.seq)]) }
                    }
                    continue
                }
                // Sign the next SETs while these are sent.
                next = signing(try await readClaims(s))
                for o in batch {
                    try await send(o, url: url, authorization: authorization, stream: id)
                    cursor = o.seq ?? cursor
                    deliveredSinceSave += 1
                    try await save(force: false)
                }
            }
        }
        // On the way out (cancelled: the stream changed, or shutdown) the checkpoint is
        // written too; a crash instead resends what was sent since the last write.
        do {
            try await loop()
        } catch {
            try? await save(force: true)
            throw error
        }
        try await save(force: true)
    }

    /// POSTs one SET until the receiver accepts (202) or refuses it (400, recorded).
    private func send(_ o: Outgoing, url: String, authorization: String?, stream id: String) async throws {
        var backoff = signals.configuration.retryInitial
        while true {
            try Task.checkCancellation()
            var req = HTTPClientRequest(url: url)
            req.method = .POST
            req.headers.add(name: "Content-Type", value: "application/secevent+jwt")
            req.headers.add(name: "Accept", value: "application/json")
            if let authorization { req.headers.add(name: "Authorization", value: authorization) }
            req.body = .bytes(ByteBuffer(string: o.jwt))
            var failure: String
            do {
                let resp = try await client.execute(req, timeout: .init(signals.configuration.requestTimeout))
                let body = try await resp.body.collect(upTo: 64 * 1024)
                switch resp.status.code {
                case 202, 200, 204:
                    return
                case 400:
                    let j = try? JSON.parse(body.readableBytesView)
                    var m: [(String, JSON)] = [("at", .string(signals.clock().formatted)), ("jti", .string(o.jti)), ("status", .int(400))]
                    m.append(("err", .string(j?["err"]?.stringValue ?? "invalid_request")))
                    if let d = j?["description"]?.stringValue { m.append(("description", .string(String(d.prefix(1024))))) }
                    let error = JSON.object(m)
                    try await signals.store.update(id) { s in s.record(error: error) }
                    logger.notice("shared signals: the receiver refused a SET", metadata: ["stream": "\(id)", "jti": "\(o.jti)"])
                    return
                default:
                    failure = "HTTP \(resp.status.code)"
                }
            } catch let e as CancellationError {
                throw e
            } catch {
                failure = "\(error)"
            }
            if Task.isCancelled { throw CancellationError() }
            logger.debug("shared signals: push failed; retrying", metadata: ["stream": "\(id)", "jti": "\(o.jti)", "failure": "\(failure)", "retryIn": "\(backoff)"])
            try await Task.sleep(for: backoff)
            backoff = min(backoff * 2, signals.configuration.retryMax)
        }
    }
}
