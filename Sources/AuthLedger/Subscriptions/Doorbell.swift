import AuthLedgerCore
import Foundation
import Synchronization

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
package final class Doorbell: Sendable {
    private struct Waiter {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var rung = false
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        /// The deadline of this doorbell's entry in the ticker (nil: none armed).
        var armed: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    package init() {}

    /// Wakes every waiter; remembered for the next `wait` when nobody waits.
    package func ring() {
        let woken: [Waiter] = state.withLock { s in
            if s.waiters.isEmpty { s.rung = true; return [] }
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in woken { w.continuation.resume() }
    }

    /// Waiters currently suspended (for tests).
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns when rung (now or since the last wait), after `timeout`, or on cancellation.
    package func wait(timeout: Duration) async {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let id: UInt64 = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                enum Outcome { case now, waiting, arm }
                let outcome: Outcome = state.withLock { s in
                    if s.rung || Task.isCancelled || deadline <= ContinuousClock.now {
                        s.rung = false
                        return .now
                    }
                    s.waiters.append(Waiter(id: id, deadline: deadline, continuation: c))
                    guard s.armed.map({ deadline < $0 }) ?? true else { return .waiting }
                    s.armed = deadline
                    return .arm
                }
                switch outcome {
                case .now: c.resume()
                case .waiting: break
                case .arm: DoorbellTicker.shared.schedule(self, at: deadline)
                }
            }
        } onCancel: {
            let w: Waiter? = state.withLock { s in
                guard let k = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: k)
            }
            w?.continuation.resume()
        }
    }

    /// The ticker reached this doorbell's entry for `deadline`: resumes the waiters
    /// that are due and returns the next deadline to arm, if any.
    fileprivate func expire(entry deadline: ContinuousClock.Instant, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var due: [Waiter] = []
        let next: ContinuousClock.Instant? = state.withLock { s in
            // An older entry superseded by an earlier one: the earlier one is in charge.
            guard s.armed == deadline else { return nil }
            var keep: [Waiter] = []
            for w in s.waiters {
                if w.deadline <= now { due.append(w) } else { keep.append(w) }
            }
            s.waiters = keep
            s.armed = keep.map(\.deadline).min()
            return s.armed
        }
        for w in due { w.continuation.resume() }
        return next
    }
}

/// The one timer of the process: a heap of (deadline, doorbell) entries and one task
/// sleeping until the earliest (`Task.sleep(until:)`); an entry that becomes the earliest
/// cancels that sleep and starts a shorter one. No thread of its own, and no task per wait.
final class DoorbellTicker: Sendable {
    static let shared = DoorbellTicker()

    private struct State {
        var heap = MinHeap<ContinuousClock.Instant, Doorbell>()
        /// The sleeping task and the deadline it wakes at (nil: none sleeps).
        var sleeper: (deadline: ContinuousClock.Instant, task: Task<Void, Never>)?
    }

    private let state = Mutex(State())

    func schedule(_ doorbell: Doorbell, at deadline: ContinuousClock.Instant) {
        state.withLock { s in
            s.heap.push(deadline, doorbell)
            // Only an entry that became the earliest changes how long the ticker sleeps.
            if s.sleeper.map({ deadline < $0.deadline }) ?? true { arm(&s, deadline) }
        }
    }

    /// Starts the task sleeping until `deadline` in place of the one sleeping longer (under the lock).
    private func arm(_ s: inout State, _ deadline: ContinuousClock.Instant) {
        s.sleeper?.task.cancel()
        s.sleeper = (deadline, Task { [self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            if !Task.isCancelled { fire(deadline) }
        })
    }

    /// The sleep until `deadline` ended: expires the entries due and sleeps until the next.
    private func fire(_ deadline: ContinuousClock.Instant) {
        let now = ContinuousClock.now
        let due: [(key: ContinuousClock.Instant, value: Doorbell)] = state.withLock { s in
            // A later sleeper replaced this one meanwhile: it is in charge.
            guard s.sleeper?.deadline == deadline else { return [] }
            s.sleeper = nil
            var due: [(key: ContinuousClock.Instant, value: Doorbell)] = []
            while let first = s.heap.first, first.key <= now, let e = s.heap.pop() { due.append(e) }
            return due
        }
        let again = due.compactMap { e in e.value.expire(entry: e.key, now: now).map { ($0, e.value) } }
        state.withLock { s in
            for (next, doorbell) in again { s.heap.push(next, doorbell) }
            if let first = s.heap.first?.key, s.sleeper.map({ first < $0.deadline }) ?? true { arm(&s, first) }
        }
    }
}
