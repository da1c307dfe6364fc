import Foundation

/// Who a request comes from, for the per-token limits: the SHA-256 digest of its bearer
/// token (never the token itself). Under `--insecure-dev` without tokens every caller
/// is the same `anonymous` one.
struct Caller: Hashable, Sendable {
    let digest: [UInt8]
    static let anonymous = Caller(digest: [])
}

/// A request rate: `perSecond` on average, up to `burst` at once (a token bucket).
public struct RateLimit: Sendable, Equatable {
    public var perSecond: Double
    public var burst: Int

    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = burst
    }
}

/// The configuration is not usable (a limit of zero or less, say).
public struct ServerConfigurationError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ d: String) { description = d }
}

/// One token bucket per caller. Buckets exist only for authenticated callers (a
/// configured token's digest, or `anonymous`), so there are at most as many as there
/// are configured tokens, plus one: unknown tokens are refused (401) before a bucket
/// is looked up.
final class TokenBuckets: @unchecked Sendable {
    struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    let limit: RateLimit
    private let lock = NSLock()
    private var buckets: [Caller: Bucket] = [:]

    init(_ limit: RateLimit) { self.limit = limit }

    /// Takes one request's token from `caller`'s bucket: nil when granted, otherwise
    /// the whole seconds (at least 1) until the next token (`Retry-After`). A refused
    /// request takes nothing.
    func take(_ caller: Caller, at now: ContinuousClock.Instant = ContinuousClock().now) -> Int? {
        let capacity = Double(limit.burst)
        return lock.withLock { () -> Int? in
            var b = buckets[caller] ?? Bucket(tokens: capacity, refilled: now)
            if now > b.refilled {
                let d = b.refilled.duration(to: now)
                let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
                b.tokens = min(capacity, b.tokens + seconds * limit.perSecond)
                b.refilled = now
            }
            let granted = b.tokens >= 1
            if granted { b.tokens -= 1 }
            buckets[caller] = b
            if granted { return nil }
            let wait = ((1 - b.tokens) / limit.perSecond).rounded(.up)
            return wait.isFinite ? max(1, Int(min(wait, 86_400))) : 86_400
        }
    }

    /// How many callers have a bucket (tests: bounded by the configured tokens).
    var count: Int { lock.withLock { buckets.count } }
}

/// Open event streams per caller, at most `limit` each. A caller's entry goes away
/// with its last stream, so the table holds only callers with open streams.
final class SubscriberSlots: @unchecked Sendable {
    let limit: Int
    private let lock = NSLock()
    private var open: [Caller: Int] = [:]

    init(limit: Int) { self.limit = limit }

    /// A slot for one more stream of `caller`, or nil when it has `limit` open.
    func acquire(_ caller: Caller) -> SubscriberSlot? {
        let granted = lock.withLock { () -> Bool in
            let n = open[caller, default: 0]
            guard n < limit else { return false }
            open[caller] = n + 1
            return true
        }
        return granted ? SubscriberSlot(self, caller) : nil
    }

    fileprivate func release(_ caller: Caller) {
        lock.withLock {
            let n = open[caller, default: 0] - 1
            open[caller] = n > 0 ? n : nil
        }
    }

    func count(_ caller: Caller) -> Int { lock.withLock { open[caller, default: 0] } }
    /// How many callers have an entry (tests: none once every stream closed).
    var callers: Int { lock.withLock { open.count } }
}

/// One open stream's place in its caller's quota. Released when the stream ends, and
/// in any case when the slot is dropped (a response whose body never ran, a request
/// that failed after acquiring it): a slot cannot leak.
final class SubscriberSlot: @unchecked Sendable {
    private let owner: SubscriberSlots
    private let caller: Caller
    private let lock = NSLock()
    private var released = false

    fileprivate init(_ owner: SubscriberSlots, _ caller: Caller) {
        self.owner = owner
        self.caller = caller
    }

    func release() {
        let first = lock.withLock { () -> Bool in
            defer { released = true }
            return !released
        }
        if first { owner.release(caller) }
    }

    deinit { release() }
}
