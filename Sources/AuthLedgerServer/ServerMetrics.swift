import AuthLedger
import CoreMetrics
import Foundation
import Metrics
import Prometheus
import Synchronization

/// The service's metrics, recorded through swift-metrics into this server's own
/// Prometheus registry (so several servers in one process — tests — don't mix).
final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory
    private let appendedEvents: CoreMetrics.Counter
    private let appendLatency: CoreMetrics.Timer
    private let subscribers: Meter
    private let cutOff: CoreMetrics.Counter
    private let expired: CoreMetrics.Counter
    private let refusals = Mutex<[String: CoreMetrics.Counter]>([:])
    private let openStreams = Atomic<Int>(0)

    init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
        ]
        self.factory = factory
        appendedEvents = CoreMetrics.Counter(label: "authledger_appended_events_total", factory: factory)
        appendLatency = CoreMetrics.Timer(label: "authledger_append_duration_seconds", factory: factory)
        subscribers = Meter(label: "authledger_subscribers", factory: factory)
        cutOff = CoreMetrics.Counter(label: "authledger_subscribers_cut_off_total", factory: factory)
        expired = CoreMetrics.Counter(label: "authledger_sweeper_expired_total", factory: factory)
        subscribers.set(0)
    }

    /// One append (command or batch) committed: its events and how long it took, queue included.
    func appended(_ count: Int, since start: ContinuousClock.Instant) {
        appendedEvents.increment(by: count)
        let d = ContinuousClock().now - start
        appendLatency.recordNanoseconds(d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000)
    }

    /// Counts one refusal with this stable code (the ledger's or the HTTP API's own).
    func refused(_ code: String) {
        let c = refusals.withLock { refusals in
            if let existing = refusals[code] { return existing }
            let c = CoreMetrics.Counter(label: "authledger_refusals_total", dimensions: [("code", code)], factory: factory)
            refusals[code] = c
            return c
        }
        c.increment()
    }

    func subscriberConnected() {
        subscribers.increment()
        openStreams.add(1, ordering: .relaxed)
    }
    func subscriberDisconnected() {
        subscribers.decrement()
        openStreams.subtract(1, ordering: .relaxed)
    }
    /// Event streams open now (the live feed's and durable subscriptions').
    var openSubscribers: Int { openStreams.load(ordering: .relaxed) }
    func subscriberCutOff() { cutOff.increment() }
    func sweptChallenges(_ n: Int) { expired.increment(by: n) }

    /// The Prometheus text exposition.
    func exposition() -> [UInt8] {
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }
}
