import Foundation
import Synchronization

/// The runs of one scan of the log, handed to every consumer of a replay (its partitions
/// and its tree check, `Ledger+ReplayOnce.swift`): each run is kept until every consumer
/// took it, and the scan waits while `ahead` runs are held, so memory stays at a few runs.
/// A failure of the scan or of a consumer stops everyone.
// @unchecked: every field is guarded by `condition` (an NSCondition: the consumers' and the
// scan's threads wait on it, which a Mutex cannot).
final class ReplayFeed: @unchecked Sendable {
    private let condition = NSCondition()
    private let consumers: Int
    private let ahead: Int
    private var runs: [Int: (batch: LogBatch, left: Int)] = [:]
    private var produced = 0
    private var finished = false
    private var failure: Error?
    /// Whether the stored tree has no hash outside the log's (nil: not told yet).
    private var inside: Bool?

    /// Set by a consumer that failed (the scan stops; the other consumers are told this).
    struct Stopped: Error {}

    init(consumers: Int, ahead: Int = 3) {
        self.consumers = consumers
        self.ahead = ahead
    }

    /// Adds the next run, waiting while `ahead` runs are held; false when the replay failed.
    func put(_ batch: LogBatch) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while runs.count >= ahead && failure == nil { condition.wait() }
        guard failure == nil else { return false }
        runs[produced] = (batch, consumers)
        produced += 1
        condition.broadcast()
        return true
    }

    /// The scan tells, before its first run, whether the stored tree has no hash outside the
    /// log's (`AsyncBatchScanning.scanRuns`'s `start`).
    func begin(treeInside: Bool) {
        condition.lock()
        inside = treeInside
        condition.broadcast()
        condition.unlock()
    }

    /// What the scan told with `begin`, waiting for it (false when it ended without telling).
    func treeInside() throws -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while inside == nil && !finished && failure == nil { condition.wait() }
        if let failure { throw failure }
        return inside ?? false
    }

    /// The scan ended, with `error` when it failed.
    func finish(_ error: Error? = nil) {
        condition.lock()
        if let error, failure == nil { failure = error }
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// A consumer failed: the others stop at their next run.
    func stop() {
        condition.lock()
        if failure == nil { failure = Stopped() }
        condition.broadcast()
        condition.unlock()
    }

    /// Run `k`, waiting for it; nil after the last one. Each consumer takes every run once, in order.
    func take(_ k: Int) throws -> LogBatch? {
        condition.lock()
        defer { condition.unlock() }
        while k >= produced && !finished && failure == nil { condition.wait() }
        if let failure { throw failure }
        guard k < produced, var run = runs[k] else { return nil }
        run.left -= 1
        runs[k] = run.left == 0 ? nil : run
        condition.broadcast()
        return run.batch
    }

    /// Starts `body(0..<n)` on `n` threads of their own (`DedicatedThread`: they wait for
    /// one another on the feed, which neither the cooperative pool nor
    /// `DispatchQueue.concurrentPerform` allows: either may run them one after another).
    static func threads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) -> Consumers {
        let consumers = Consumers((0..<n).map { DedicatedThread(name: "authledger-replay-\($0)", stackSize: 4 << 20) })
        for (k, t) in consumers.threads.enumerated() {
            t.submit {
                body(k)
                consumers.ended()
            }
            t.stop()
        }
        return consumers
    }

    /// The consumers' threads: waited for by a thread (`wait`) or a task (`finished`).
    final class Consumers: Sendable {
        fileprivate let threads: [DedicatedThread]
        private let state: Mutex<(left: Int, waiter: CheckedContinuation<Void, Never>?)>

        fileprivate init(_ threads: [DedicatedThread]) {
            self.threads = threads
            state = Mutex((threads.count, nil))
        }

        fileprivate func ended() {
            let waiter: CheckedContinuation<Void, Never>? = state.withLock { s in
                s.left -= 1
                guard s.left == 0 else { return nil }
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }

        /// Returns when every consumer ended, the calling task suspended meanwhile.
        func finished() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s in
                    if s.left == 0 { return true }
                    s.waiter = c
                    return false
                }
                if now { c.resume() }
            }
        }

        /// Blocks the calling thread until every consumer ended.
        func wait() {
            for t in threads { t.join() }
        }
    }
}
