import Foundation

/// The runs of one scan of the log, handed to every consumer of a replay (its partitions
/// and its tree check, `Ledger+ReplayOnce.swift`): each run is kept until every consumer
/// took it, and the scan waits while `ahead` runs are held, so memory stays at a few runs.
/// A failure of the scan or of a consumer stops everyone.
// @unchecked: every field is guarded by `condition`.
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
    /// log's (`BatchScanning.treeHashesOutside`).
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

    /// Starts `body(0..<n)` on `n` threads of their own (they wait for one another, which
    /// `DispatchQueue.concurrentPerform` does not allow: it may run them one after another);
    /// the group is left when all ended.
    static func threads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
        let done = DispatchGroup()
        for k in 0..<n {
            done.enter()
            let t = Thread {
                body(k)
                done.leave()
            }
            t.stackSize = 4 << 20
            t.start()
        }
        return done
    }
}
