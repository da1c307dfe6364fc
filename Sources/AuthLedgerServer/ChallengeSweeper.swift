import AuthLedger
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Appends `challenge.expired` (actor `system`) for unresolved challenges once past
/// `expiresAt`, so subscribers learn of expiry without timers of their own.
///
/// It reads the unresolved challenges once, then follows the event feed (this
/// process's commits and other processes') to track issues and resolutions, so a
/// sweep costs nothing when no challenge is due, however many users there are.
struct ChallengeSweeper: Service {
    let ledger: Ledger
    let interval: Duration
    let pollInterval: Duration
    let clock: @Sendable () -> Timestamp
    let metrics: ServerMetrics
    let logger: Logger

    func run() async throws {
        // A storage error must not take the HTTP service down with it: log, wait, start over.
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await self.loop() }
            } catch is CancellationError {
                // Graceful shutdown: an expiry in flight has finished (the writer completes
                // what it was given); the next sweep after restart picks up the rest.
                return
            } catch {
                logger.error("sweeper failed; restarting it", metadata: ["error": "\(error)"])
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(5)) }
            }
        }
    }

    private func loop() async throws {
        let tracker = Tracker()
        let (position, open) = try await ledger.unresolvedChallenges()
        tracker.add(open)
        let feed = try await ledger.events(from: position + 1,
                                     filter: EventFilter(types: [.challengeIssued, .challengeApproved, .challengeDenied, .challengeExpired]),
                                     pollInterval: pollInterval)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await e in feed { tracker.apply(e) }
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: interval)
                    await sweep(tracker)
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }

    func sweep(_ tracker: Tracker) async {
        let now = clock()
        let due = tracker.due(at: now)
        guard !due.isEmpty else { return }
        var expired = 0
        for c in due {
            do {
                let start = ContinuousClock().now
                let result = try await ledger.perform(.expireChallenge(user: c.user, challengeId: c.challengeId),
                                             meta: StringMap([("actor", "system")]), clock: clock)
                metrics.appended(result.events.count, since: start)
                tracker.remove(c.user, c.challengeId)
                expired += 1
            } catch let e as LedgerError where e.code == .challengeNotExpired || e.code == .timeRegression {
                // The stream's clock is ahead of ours: try again on a later sweep.
                logger.debug("challenge not yet expirable", metadata: ["code": "\(e.code.rawValue)"])
            } catch let e as LedgerError {
                // Resolved meanwhile (by another process, say): nothing to expire.
                tracker.remove(c.user, c.challengeId)
                logger.debug("challenge not expired", metadata: ["code": "\(e.code.rawValue)"])
            } catch {
                logger.error("sweeper could not append", metadata: ["error": "\(error)"])
                return
            }
        }
        if expired > 0 {
            metrics.sweptChallenges(expired)
            logger.info("expired challenges", metadata: ["count": "\(expired)"])
        }
    }

    /// Unresolved challenges by (user, id), fed by the event feed.
    final class Tracker: Sendable {
        private let open = Mutex<[String: [String: Timestamp]]>([:])

        func add(_ list: [UnresolvedChallenge]) {
            open.withLock { open in for c in list { open[c.user, default: [:]][c.challengeId] = c.expiresAt } }
        }

        func apply(_ e: RecordedEvent) {
            guard let user = e.event.user, let cid = e.event.data.string(.challengeId) else { return }
            if e.event.type == .challengeIssued, let expiresAt = e.event.data.time(.expiresAt) {
                open.withLock { $0[user, default: [:]][cid] = expiresAt }
            } else {
                remove(user, cid)
            }
        }

        func remove(_ user: String, _ cid: String) {
            open.withLock { open in
                open[user]?[cid] = nil
                if open[user]?.isEmpty == true { open[user] = nil }
            }
        }

        func due(at now: Timestamp) -> [UnresolvedChallenge] {
            open.withLock { open in
                open.flatMap { user, cs in
                    cs.filter { ChallengeRecord.hasExpired($0.value, at: now) }.map { UnresolvedChallenge(user: user, challengeId: $0.key, expiresAt: $0.value) }
                }.sorted { ($0.expiresAt, $0.user, $0.challengeId) < ($1.expiresAt, $1.user, $1.challengeId) }
            }
        }
    }
}
