import Foundation
import Synchronization

/// Who a request comes from. `digest` keys the per-caller limits and the ownership of
/// durable subscriptions: the SHA-256 digest of a static bearer token (never the token
/// itself), or of the caller's name for a JWT or a client certificate (stable across the
/// tokens an identity provider issues). `name` is what its events' `meta.caller` says:
/// `token:<name>`, `service:<client_id|azp|sub>` or `cert:<identity>`. Under
/// `--insecure-dev` without tokens every caller is the same `anonymous` one, unnamed.
struct Caller: Hashable, Sendable {
    let digest: [UInt8]
    var name: String? = nil
    static let anonymous = Caller(digest: [])

    /// A caller known by its name alone (a JWT's service, a certificate's identity).
    init(named name: String) {
        digest = TokenStore.digest("caller " + name)
        self.name = name
    }

    init(digest: [UInt8], name: String? = nil) {
        self.digest = digest
        self.name = name
    }

    /// `meta.actor` of a command that names none: `service:` and the name without its kind.
    var actor: String? {
        guard let name, let colon = name.firstIndex(of: ":") else { return nil }
        return "service:" + name[name.index(after: colon)...]
    }

    /// The caller of the request being handled (set by ``AccessMiddleware`` around the
    /// route's handler): what the appends of the request record as `meta.caller`.
    @TaskLocal static var current: Caller?
}

/// A request rate: `perSecond` on average, up to `burst` at once (a token bucket).
public struct RateLimit: Sendable, Equatable {
    /// The average rate allowed, in requests per second (above 0).
    public var perSecond: Double
    /// How many requests may come at once after a quiet spell (at least 1).
    public var burst: Int

    /// A rate of `perSecond` with bursts of `burst`; checked when the server is created.
    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = burst
    }
}

/// The configuration is not usable (a limit of zero or less, say).
public struct ServerConfigurationError: Error, CustomStringConvertible, Sendable {
    /// What is wrong with the configuration.
    public var description: String
    init(_ d: String) { description = d }
}

/// A token bucket: up to `burst` tokens, refilled at `perSecond`; a request takes one.
/// The one definition behind the per-token rate limit and the failed-authentication limit.
struct TokenBucket {
    var tokens: Double
    var refilled: ContinuousClock.Instant

    /// A full bucket at `now`.
    init(full limit: RateLimit, at now: ContinuousClock.Instant) {
        tokens = Double(limit.burst)
        refilled = now
    }

    /// Adds what refilled since the last call (never above `burst`).
    mutating func refill(_ limit: RateLimit, at now: ContinuousClock.Instant) {
        guard now > refilled else { return }
        let d = refilled.duration(to: now)
        let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        tokens = min(Double(limit.burst), tokens + seconds * limit.perSecond)
        refilled = now
    }

    /// Takes one token: true when there was one.
    mutating func take() -> Bool {
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Whole seconds until the next token (at least 1, at most a day): `Retry-After`.
    func secondsUntilToken(_ limit: RateLimit) -> Int {
        let wait = ((1 - tokens) / limit.perSecond).rounded(.up)
        return wait.isFinite ? max(1, Int(min(wait, 86_400))) : 86_400
    }

    func isFull(_ limit: RateLimit) -> Bool { tokens >= Double(limit.burst) }
}

/// One token bucket per caller. Buckets exist only for authenticated callers (a
/// configured token's digest, or `anonymous`), so there are at most as many as there
/// are configured tokens, plus one: unknown tokens are refused (401) before a bucket
/// is looked up.
final class TokenBuckets: Sendable {
    let limit: RateLimit
    private let buckets = Mutex<[Caller: TokenBucket]>([:])

    init(_ limit: RateLimit) { self.limit = limit }

    /// Takes one request's token from `caller`'s bucket: nil when granted, otherwise
    /// the whole seconds (at least 1) until the next token (`Retry-After`). A refused
    /// request takes nothing.
    func take(_ caller: Caller, at now: ContinuousClock.Instant = ContinuousClock().now) -> Int? {
        buckets.withLock { buckets -> Int? in
            var b = buckets[caller] ?? TokenBucket(full: limit, at: now)
            b.refill(limit, at: now)
            let granted = b.take()
            buckets[caller] = b
            return granted ? nil : b.secondsUntilToken(limit)
        }
    }

    /// How many callers have a bucket (tests: bounded by the configured tokens).
    var count: Int { buckets.withLock { $0.count } }
}

/// Open event streams per caller, at most `limit` each. A caller's entry goes away
/// with its last stream, so the table holds only callers with open streams.
final class SubscriberSlots: Sendable {
    let limit: Int
    private let open = Mutex<[Caller: Int]>([:])

    init(limit: Int) { self.limit = limit }

    /// A slot for one more stream of `caller`, or nil when it has `limit` open.
    func acquire(_ caller: Caller) -> SubscriberSlot? {
        let granted = open.withLock { open -> Bool in
            let n = open[caller, default: 0]
            guard n < limit else { return false }
            open[caller] = n + 1
            return true
        }
        return granted ? SubscriberSlot(self, caller) : nil
    }

    fileprivate func release(_ caller: Caller) {
        open.withLock { open in
            let n = open[caller, default: 0] - 1
            open[caller] = n > 0 ? n : nil
        }
    }

    func count(_ caller: Caller) -> Int { open.withLock { $0[caller, default: 0] } }
    /// How many callers have an entry (tests: none once every stream closed).
    var callers: Int { open.withLock { $0.count } }
}

/// One open stream's place in its caller's quota. Released when the stream ends, and
/// in any case when the slot is dropped (a response whose body never ran, a request
/// that failed after acquiring it): a slot cannot leak.
final class SubscriberSlot: Sendable {
    private let owner: SubscriberSlots
    private let caller: Caller
    private let released = Atomic<Bool>(false)

    fileprivate init(_ owner: SubscriberSlots, _ caller: Caller) {
        self.owner = owner
        self.caller = caller
    }

    func release() {
        // Only the first call gives the place back.
        if !released.exchange(true, ordering: .acquiringAndReleasing) { owner.release(caller) }
    }

    deinit { release() }
}
