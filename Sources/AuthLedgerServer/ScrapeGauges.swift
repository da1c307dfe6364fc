import AuthLedger
import AuthLedgerSharedSignals
import Prometheus
import Synchronization

/// The gauges `/metrics` reads when it is scraped: the head, the store's size (LMDB),
/// the clients watching the log (HOOK, issue 38: watches of projections count here once they
/// land, through `ServerMetrics.subscriberConnected`), the Shared Signals push lag per stream, and the build.
final class ScrapeGauges: Sendable {
    let registry: PrometheusCollectorRegistry
    let head: Gauge
    let watchers: Gauge
    /// The store's file, the part of it in use, the map (nil: the driver reports none).
    let store: (file: Gauge, used: Gauge, map: Gauge)?
    private let lags = Mutex<[String: Gauge]>([:])

    init(registry: PrometheusCollectorRegistry, ledger: Ledger) {
        self.registry = registry
        head = Self.gauge(registry, "head", "seq", "The log's head: the seq of its last event.")
        watchers = Self.gauge(registry, "watchers", "", "Clients watching the log now: open event streams and subscription streams (and watches).")
        store = ledger.storeFigures().map { _ in
            (Self.gauge(registry, "store_file", "bytes", "Size of the store's data.mdb on disk."),
             Self.gauge(registry, "store_used", "bytes", "Bytes of data.mdb in use (up to its last page written)."),
             Self.gauge(registry, "store_map", "bytes", "The LMDB map: the size the store may reach before the map grows."))
        }
        Self.gauge(registry, "build", "info", "The running release (always 1).", labels: [("version", AuthLedgerVersion.current)]).set(Int64(1))
    }

    /// The gauge `authledger_<name>_<unit>` with its help text.
    static func gauge(_ registry: PrometheusCollectorRegistry, _ name: String, _ unit: String, _ help: String,
                      labels: [(String, String)] = []) -> Gauge {
        registry.makeGauge(descriptor: MetricNameDescriptor(namespace: "authledger", metricName: name, unitName: unit, helpText: help), labels: labels)
    }

    /// Reads every value now. A store that does not answer leaves the head where it was.
    func refresh(_ ledger: Ledger, _ signals: SharedSignals, watching: Int) async {
        watchers.set(Int64(watching))
        if let store, let f = ledger.storeFigures() {
            store.file.set(f.fileBytes)
            store.used.set(f.usedBytes)
            store.map.set(f.mapBytes ?? 0)
        }
        guard let seq = try? await ledger.head().seq else { return }
        head.set(Int64(seq))
        guard let now = try? await signals.pushLags(head: seq) else { return }
        lags.withLock { lags in
            for (id, gauge) in lags where now[id] == nil {
                registry.unregisterGauge(gauge)
                lags[id] = nil
            }
            for (id, lag) in now {
                let gauge = lags[id] ?? Self.gauge(registry, "ssf_push_lag", "events", "Events of the log a push stream has not delivered yet.",
                                                   labels: [("stream", id)])
                lags[id] = gauge
                gauge.set(Int64(lag))
            }
        }
    }
}
