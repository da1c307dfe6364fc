import AuthLedger
import AuthLedgerLMDB
import AuthLedgerTestSupport
@testable import AuthLedgerServer
import Foundation
import Testing

/// The per-token limits of docs/SECURITY.md: a request rate (token bucket, 429
/// `rate_limited` with `Retry-After`, `/health` exempt) and a number of open event
/// streams (429 `rate_limited`). Tiny limits, so a few requests cross them; a rate of
/// 0.001/s never refills within a test.
@Suite(.timeLimit(.minutes(2))) struct LimitTests {
    static let frozen = RateLimit(perSecond: 0.001, burst: 3)

    @Test func aTokenOverItsRateGets429WithRetryAfterAndOtherTokensAndHealthDoNot() async throws {
        try await withServer(configure: { $0.rateLimit = Self.frozen }) { s in
            // Given a burst of 3: the first three requests of a token are served
            for i in 0..<3 {
                let r = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
                #expect(r.status == 200, "request \(i + 1): \(r.status) \(r.body)")
            }
            // Then the fourth is refused with 429 rate_limited and a Retry-After in whole seconds
            let refused = try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token")
            #expect(refused.status == 429 && refused.error == "rate_limited", "\(refused.status) \(refused.body)")
            let retry = try #require(refused.headers.first(name: "Retry-After").flatMap { Int($0) }, "\(refused.headers)")
            #expect(retry >= 1)
            // And every authenticated route of that token counts (metrics, the feed)
            #expect(try await s.call(.GET, "/metrics", token: "reader-token").status == 429)
            #expect(try await s.call(.GET, "/v1/events?from=1", token: "reader-token").status == 429)
            // And /health is exempt
            for _ in 0..<10 { #expect(try await s.call(.GET, "/health", token: nil).status == 200) }
            // And another token has its own bucket
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: "rw-token").status == 200)
            // And an unknown token is 401, not 429 (authentication first; no bucket for it)
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: "nobody").status == 401)
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: nil).status == 401)
        }
    }

    @Test func aRefusedAppendAppendsNothing() async throws {
        try await withServer(configure: { $0.rateLimit = Self.frozen }) { s in
            for second in 0..<5 {
                let body = Fixture.array([second == 0 ? Fixture.registered("alice", "phone") : Fixture.accessed("alice", "phone", second: second)])
                let r = try await s.call(.POST, "/v1/events", token: "importer-token", body: body)
                #expect(r.status == (second < 3 ? 201 : 429), "append \(second + 1): \(r.status) \(r.body)")
            }
            let history = try await s.call(.GET, "/v1/users/alice/history", token: "reader-token")
            #expect(history.json?.arrayValue?.count == 3, "\(history.body)")
        }
    }

    @Test func concurrentRequestsNeverGetMoreThanTheBurst() async throws {
        try await withServer(configure: { $0.rateLimit = RateLimit(perSecond: 0.001, burst: 5) }) { s in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<40 {
                    group.addTask { try await s.call(.GET, "/v1/users/alice/cooling", token: "reader-token").status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 5, "\(statuses)")
            #expect(statuses.filter { $0 == 429 }.count == 35, "\(statuses)")
        }
    }

    @Test func theBucketRefillsAtTheConfiguredRate() async throws {
        try await withServer(configure: { $0.rateLimit = RateLimit(perSecond: 20, burst: 1) }) { s in
            // Back-to-back requests soon outrun 20/s with no burst to spend
            var refused = false
            for _ in 0..<200 where !refused {
                refused = try await s.call(.GET, "/v1/users/alice/cooling", token: "reader-token").status == 429
            }
            #expect(refused, "200 back-to-back requests were all served at 20/s, burst 1")
            // And after a pause the token is served again
            var served = false
            for _ in 0..<50 where !served {
                try await Task.sleep(for: .milliseconds(100))
                served = try await s.call(.GET, "/v1/users/alice/cooling", token: "reader-token").status == 200
            }
            #expect(served, "the bucket never refilled")
        }
    }

    @Test func eventStreamsPerTokenAreLimitedBothFeedsCounted() async throws {
        try await withServer(configure: { $0.maxSubscribersPerToken = 2 }) { s in
            #expect(try await s.call(.PUT, "/v1/subscriptions/mailer", token: "reader-token", body: "{}").status == 201)
            // Given a live feed and a durable subscription's stream of the same token
            let live = try await s.subscribe("/v1/events")
            let durable = try await s.subscribe("/v1/subscriptions/mailer/events")
            #expect(live.status == 200 && durable.status == 200)
            // Then a third stream of that token is refused, on either route
            for path in ["/v1/events", "/v1/subscriptions/mailer/events"] {
                let extra = try await s.subscribe(path)  // returns at the response head: a served stream fails fast here
                extra.close()
                #expect(extra.status == 429, "\(path): \(extra.status)")
                if extra.status == 429 {
                    let r = try await s.call(.GET, path, token: "reader-token")
                    #expect(r.status == 429 && r.error == "rate_limited" && r.headers.first(name: "Retry-After") == nil, "\(r.status) \(r.body)")
                }
            }
            // And another token has its own quota; ordinary requests of the first are served
            let other = try await s.subscribe("/v1/events", token: "rw-token")
            #expect(other.status == 200)
            #expect(try await s.call(.GET, "/v1/users/alice/devices", token: "reader-token").status == 200)
            // And a refused stream took no slot; once one stream closes, a new one is served
            live.close()
            var reopened: SSEClient?
            for _ in 0..<100 where reopened == nil {
                let attempt = try await s.subscribe("/v1/events")
                if attempt.status == 200 { reopened = attempt } else {
                    attempt.close()
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let again = try #require(reopened, "the closed stream's slot was never given back")
            let full = try await s.subscribe("/v1/events")
            full.close()
            #expect(full.status == 429)
            again.close()
            durable.close()
            other.close()
            // And every slot comes back once the streams are gone
            #expect(try await s.waitForMetric("authledger_subscribers", atMost: 0) == 0)
            let a = try await s.subscribe("/v1/events"), b = try await s.subscribe("/v1/events")
            #expect(a.status == 200 && b.status == 200)
            a.close()
            b.close()
        }
    }

    // MARK: The limiters themselves (time as an input)

    @Test func aBucketRefillsByElapsedTimeUpToItsBurstAndSaysWhenToRetry() {
        let buckets = TokenBuckets(RateLimit(perSecond: 2, burst: 3))
        let alice = Caller(digest: Array(repeating: 1, count: 32)), bob = Caller(digest: Array(repeating: 2, count: 32))
        let t0 = ContinuousClock().now
        #expect((0..<3).map { _ in buckets.take(alice, at: t0) } == [nil, nil, nil])
        #expect(buckets.take(alice, at: t0) == 1)                        // 1 token at 2/s: 0.5 s, rounded up
        #expect(buckets.take(alice, at: t0 + .milliseconds(400)) == 1)   // 0.8 of a token
        #expect(buckets.take(alice, at: t0 + .milliseconds(600)) == nil) // 1.2 tokens
        #expect(buckets.take(alice, at: t0 + .seconds(100)) == nil)      // refilled to the burst, not beyond
        #expect(buckets.take(alice, at: t0 + .seconds(100)) == nil)
        #expect(buckets.take(alice, at: t0 + .seconds(100)) == nil)
        #expect(buckets.take(alice, at: t0 + .seconds(100)) != nil)
        #expect(buckets.take(bob, at: t0) == nil)
        #expect(buckets.count == 2)
        let slow = TokenBuckets(RateLimit(perSecond: 0.1, burst: 1))
        #expect(slow.take(alice, at: t0) == nil)
        #expect(slow.take(alice, at: t0) == 10)
    }

    @Test func aSlotIsGivenBackWhenReleasedOrDroppedAndOnlyOnce() {
        let slots = SubscriberSlots(limit: 2)
        let alice = Caller(digest: [1])
        var a: SubscriberSlot? = slots.acquire(alice)
        let b = slots.acquire(alice)
        #expect(a != nil && b != nil && slots.acquire(alice) == nil)
        b?.release()
        b?.release()
        #expect(slots.count(alice) == 1)
        a = nil  // dropped without release: a response whose body never ran
        #expect(a == nil && slots.count(alice) == 0 && slots.callers == 0)
    }

    @Test func limitsBelowOneAreRefusedAtStart() async throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ledger = try await Ledger(lmdb: dir)
        for bad in [RateLimit(perSecond: 0, burst: 10), RateLimit(perSecond: 1, burst: 0), RateLimit(perSecond: .infinity, burst: 1)] {
            var config = ServerConfiguration()
            config.tokens = try TokenStore(parsing: "t:read")
            config.rateLimit = bad
            #expect(throws: ServerConfigurationError.self) { try LedgerServer(ledger: ledger, configuration: config) }
        }
        var config = ServerConfiguration()
        config.tokens = try TokenStore(parsing: "t:read")
        config.maxSubscribersPerToken = 0
        #expect(throws: ServerConfigurationError.self) { try LedgerServer(ledger: ledger, configuration: config) }
    }
}
