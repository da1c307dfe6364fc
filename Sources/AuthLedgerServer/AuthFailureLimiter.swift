import Foundation

/// Failed authentications per client address (a token bucket each): an address that
/// used up its bucket gets 429 `rate_limited` on every route but `/health`, before its
/// token is even looked at, until the bucket refills. Guessing tokens and flooding the
/// service with unauthenticated requests are what is abusable; a configured token's
/// own traffic is not counted.
///
/// The table is bounded: past `maxAddresses` entries, those whose bucket is full again
/// are dropped, and if that is not enough the table starts over (fail open: a flood of
/// addresses must not make the service refuse everybody).
final class AuthFailureLimiter: @unchecked Sendable {
    struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    let limit: RateLimit
    let maxAddresses: Int
    private let lock = NSLock()
    private var buckets: [String: Bucket] = [:]

    init(_ limit: RateLimit, maxAddresses: Int = 65_536) {
        self.limit = limit
        self.maxAddresses = maxAddresses
    }

    private func refilled(_ b: Bucket, _ now: ContinuousClock.Instant) -> Bucket {
        guard now > b.refilled else { return b }
        let d = b.refilled.duration(to: now)
        let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        return Bucket(tokens: min(Double(limit.burst), b.tokens + seconds * limit.perSecond), refilled: now)
    }

    /// nil when `address` may try to authenticate; otherwise the whole seconds (at
    /// least 1) until it may (`Retry-After`).
    func blocked(_ address: String, at now: ContinuousClock.Instant = ContinuousClock().now) -> Int? {
        lock.withLock { () -> Int? in
            guard let stored = buckets[address] else { return nil }
            let b = refilled(stored, now)
            buckets[address] = b
            if b.tokens >= 1 { return nil }
            let wait = ((1 - b.tokens) / limit.perSecond).rounded(.up)
            return wait.isFinite ? max(1, Int(min(wait, 86_400))) : 86_400
        }
    }

    /// Counts one failed authentication of `address`.
    func failed(_ address: String, at now: ContinuousClock.Instant = ContinuousClock().now) {
        lock.withLock {
            var b = buckets[address].map { refilled($0, now) } ?? Bucket(tokens: Double(limit.burst), refilled: now)
            b.tokens = max(0, b.tokens - 1)
            buckets[address] = b
            if buckets.count > maxAddresses {
                buckets = buckets.filter { refilled($0.value, now).tokens < Double(limit.burst) }
                if buckets.count > maxAddresses { buckets = [:] }
            }
        }
    }

    /// Addresses with a bucket (tests: bounded).
    var count: Int { lock.withLock { buckets.count } }
}
