import AuthLedger
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Whether the server should get traffic (`GET /readyz`): the store answers a read within
/// the probe's time, and the server is not draining (SIGTERM). `/livez` asks neither.
final class Readiness: Sendable {
    private let drainingFlag = Atomic<Bool>(false)
    /// The store check in flight: probes that arrive meanwhile wait on it rather than add
    /// reads to a store that does not answer.
    private let inFlight = Mutex<Task<Bool, Never>?>(nil)

    /// Whether SIGTERM was received (readiness fails from then on).
    var isDraining: Bool { drainingFlag.load(ordering: .relaxed) }

    func startDraining() { drainingFlag.store(true, ordering: .relaxed) }

    /// Whether `ledger` answered a read of its head within `limit`. A read still running
    /// after `limit` is left to finish (or fail) on its own: the answer is no.
    func storeAnswers(_ ledger: Ledger, within limit: Duration) async -> Bool {
        let check = inFlight.withLock { current -> Task<Bool, Never> in
            if let current { return current }
            let task = Task<Bool, Never> { [weak self] in
                let ok = (try? await ledger.head()) != nil
                self?.inFlight.withLock { $0 = nil }
                return ok
            }
            current = task
            return task
        }
        return await Self.first(check, orFalseAfter: limit)
    }

    /// The value of `task`, or false if it has none after `limit`.
    static func first(_ task: Task<Bool, Never>, orFalseAfter limit: Duration) async -> Bool {
        let race = Race()
        return await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            race.start(c)
            let timer = Task {
                // Cancelled means the value came first: only a full sleep answers false.
                // (A cancelled sleep that answered false raced the value and sometimes won:
                // a store that had answered got a 503; the HTTP fuzz target caught it.)
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                race.finish(false)
            }
            Task {
                let value = await task.value
                race.finish(value)
                timer.cancel()
            }
        }
    }

    /// A continuation resumed once, by whichever finishes first.
    final class Race: Sendable {
        private let waiting = Mutex<CheckedContinuation<Bool, Never>?>(nil)
        func start(_ c: CheckedContinuation<Bool, Never>) { waiting.withLock { $0 = c } }
        func finish(_ value: Bool) { waiting.withLock { $0.take() }?.resume(returning: value) }
    }
}

/// SIGTERM (the orchestrator's "stop"): `/readyz` answers 503 for the drain time, so load
/// balancers stop sending requests while everything else is still served; then it returns,
/// and the service group shuts down gracefully (no new connections, in-flight requests
/// finish, event streams end). A graceful shutdown from elsewhere (SIGINT) ends the wait.
struct Drainer: Service {
    let readiness: Readiness
    let duration: Duration
    let signals: [UnixSignal]
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: signals)
        let received: UnixSignal? = await cancelWhenGracefulShutdown {
            for await signal in signals { return signal }
            return nil
        }
        guard let received else { return }
        readiness.startDraining()
        logger.notice("draining: /readyz answers 503, then the server stops",
                      metadata: ["signal": "\(received)", "seconds": "\(duration.components.seconds)"])
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
        logger.notice("drained: stopping (no new connections; in-flight requests finish, event streams end)")
    }
}
