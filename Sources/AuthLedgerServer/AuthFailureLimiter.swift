import Foundation
import Synchronization

/// Failed authentications per client address (a token bucket each): an address that
/// used up its bucket gets 429 `rate_limited` on every route but `/health`, before its
/// token is even looked at, until the bucket refills. Guessing tokens and flooding the
/// service with unauthenticated requests are what is abusable; a configured token's
/// own traffic is not counted.
///
/// The table is bounded: past `maxAddresses` entries, those whose bucket is full again
/// are dropped, and if that is not enough the table starts over (fail open: a flood of
/// addresses must not make the service refuse everybody).
final class AuthFailureLimiter: Sendable {
    let limit: RateLimit
    let maxAddresses: Int
    private let buckets = Mutex<[String: TokenBucket]>([:])

    init(_ limit: RateLimit, maxAddresses: Int = 65_536) {
        self.limit = limit
        self.maxAddresses = maxAddresses
    }

    /// nil when `address` may try to authenticate; otherwise the whole seconds (at
    /// least 1) until it may (`Retry-After`).
    func blocked(_ address: String, at now: ContinuousClock.Instant = ContinuousClock().now) -> Int? {
        buckets.withLock { buckets -> Int? in
            guard var b = buckets[address] else { return nil }
            b.refill(limit, at: now)
            buckets[address] = b
            return b.tokens >= 1 ? nil : b.secondsUntilToken(limit)
        }
    }

    /// Counts one failed authentication of `address`.
    func failed(_ address: String, at now: ContinuousClock.Instant = ContinuousClock().now) {
        buckets.withLock { buckets in
            var b = buckets[address] ?? TokenBucket(full: limit, at: now)
            b.refill(limit, at: now)
            b.tokens = max(0, b.tokens - 1)
            buckets[address] = b
            if buckets.count > maxAddresses {
                buckets = buckets.filter { _, stored in
                    var b = stored
                    b.refill(limit, at: now)
                    return !b.isFull(limit)
                }
                if buckets.count > maxAddresses { buckets = [:] }
            }
        }
    }

    /// Addresses with a bucket (tests: bounded).
    var count: Int { buckets.withLock { $0.count } }
}
