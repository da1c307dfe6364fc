import AuthLedgerCore
import Foundation

/// Wakes waiting tasks: rung from any thread (a commit observer runs on the writer
/// thread and must never block), or by each waiter's timeout, or by cancellation.
///
/// A ring with nobody waiting is remembered (once): the next `wait` returns at once,
/// so a ring between a check and a wait is never lost. A ring wakes every waiter.
///
/// Timeouts do not cost a task per wait: a waiter is a continuation with a deadline,
/// and the doorbell keeps at most one entry (its earliest deadline) in the process'
/// single `DoorbellTicker`, which resumes the waiters whose deadline passed. Waits
/// that follow one another with the same timeout (the feed's poll, a heartbeat tick)
/// find the entry already armed and add nothing.
// @unchecked: `rung` and the waiters (checked continuations) are guarded by `lock`.
package final class Doorbell: @unchecked Sendable {
    private struct Waiter {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, Never>
    }

    private let lock = NSLock()
    private var rung = false
    private var waiters: [Waiter] = []
    private var nextID: UInt64 = 0
    /// The deadline of this doorbell's entry in the ticker (nil: none armed).
    private var armed: ContinuousClock.Instant?

    package init() {}

    /// Wakes every waiter; remembered for the next `wait` when nobody waits.
    package func ring() {
        let woken: [Waiter] = lock.withLock {
            if waiters.isEmpty { rung = true; return [] }
            defer { waiters = [] }
            return waiters
        }
        for w in woken { w.continuation.resume() }
    }

    /// Waiters currently suspended (for tests).
    package var waiting: Int { lock.withLock { waiters.count } }

    /// Returns when rung (now or since the last wait), after `timeout`, or on cancellation.
    package func wait(timeout: Duration) async {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let id: UInt64 = lock.withLock {
            nextID += 1
            return nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                lock.lock()
                if rung || Task.isCancelled || deadline <= ContinuousClock.now {
                    rung = false
                    lock.unlock()
                    c.resume()
                    return
                }
                waiters.append(Waiter(id: id, deadline: deadline, continuation: c))
                let arm = armed.map { deadline < $0 } ?? true
                if arm { armed = deadline }
                lock.unlock()
                if arm { DoorbellTicker.shared.schedule(self, at: deadline) }
            }
        } onCancel: {
            let w: Waiter? = lock.withLock {
                guard let k = waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return waiters.remove(at: k)
            }
            w?.continuation.resume()
        }
    }

    /// The ticker reached this doorbell's entry for `deadline`: resumes the waiters
    /// that are due and returns the next deadline to arm, if any.
    fileprivate func expire(entry deadline: ContinuousClock.Instant, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var due: [Waiter] = []
        let next: ContinuousClock.Instant? = lock.withLock {
            // An older entry superseded by an earlier one: the earlier one is in charge.
            guard armed == deadline else { return nil }
            armed = nil
            var keep: [Waiter] = []
            for w in waiters {
                if w.deadline <= now { due.append(w) } else { keep.append(w) }
            }
            waiters = keep
            armed = keep.map(\.deadline).min()
            return armed
        }
        for w in due { w.continuation.resume() }
        return next
    }
}

/// The one timer thread of the process: a heap of (deadline, doorbell) entries,
/// sleeping until the earliest. Hand-written (Foundation's timers need a run loop,
/// and a `Task.sleep` per wait is what this replaces): a condition variable and a
/// binary heap.
// @unchecked: the heap is guarded by `condition` (NSCondition: its thread waits on it, which Mutex cannot).
final class DoorbellTicker: @unchecked Sendable {
    static let shared = DoorbellTicker()

    private let condition = NSCondition()
    private var heap = MinHeap<ContinuousClock.Instant, Doorbell>()
    private var started = false

    func schedule(_ doorbell: Doorbell, at deadline: ContinuousClock.Instant) {
        condition.lock()
        heap.push(deadline, doorbell)
        if !started {
            started = true
            let t = Thread { [self] in loop() }
            t.name = "authledger-doorbell"
            t.start()
        }
        // Only an entry that became the earliest changes how long the thread sleeps.
        if heap.first?.key == deadline { condition.signal() }
        condition.unlock()
    }

    private func loop() {
        condition.lock()
        while true {
            guard let first = heap.first else {
                condition.wait()
                continue
            }
            let now = ContinuousClock.now
            if first.key > now {
                let wait = now.duration(to: first.key)
                let c = wait.components
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(c.seconds) + Double(c.attoseconds) / 1e18))
                continue
            }
            guard let e = heap.pop() else { continue }
            condition.unlock()
            let next = e.value.expire(entry: e.key, now: now)
            condition.lock()
            if let next { heap.push(next, e.value) }
        }
    }
}
