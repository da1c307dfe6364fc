import AuthLedgerCore
import Foundation
import Synchronization

/// A watch of one or more projections (``WatchTarget``): the answer for each target at
/// a position first (`snapshot`), then each different answer with the position it
/// reflects (`changed`), including the changes of time alone (a cooling window ending, a
/// challenge expiring: delivered within a second of that time, at the same position).
///
/// Answers are levels, not edges: each is exactly the answer at its position (and the
/// ledger's clock); a watcher that reads slowly skips intermediate answers, never the
/// latest, and a target's positions never go back. A watch costs no task and takes no
/// write lock: the ledger's one notifier evaluates each watched target once per batch
/// of commits, however many watches share it.
///
/// ```swift
/// for try await update in try await ledger.watch(.devices("alice")) {
///     print(update.kind, update.position, update.answer.json.serialized())
/// }
/// ```
///
/// The watch is its own iterator (one consumer); it ends its registration when it goes
/// away or on ``cancel()``.
public final class LedgerWatch: AsyncSequence, AsyncIteratorProtocol, Sendable {
    /// A watch delivers updates.
    public typealias Element = WatchUpdate

    /// A target of the watch, in the hub's state (``WatchHub/Registration``).
    struct Member {
        var entry: WatchHub.Entry?
        /// The digest of the last answer the watcher has (nil: none, or not known).
        var sent: Int?
        var snapshotDue = false
        var dirty = false
    }

    let hub: WatchHub
    /// What this watch follows, without duplicates, in the order given.
    public let targets: [WatchTarget]
    /// Its registration's key in the hub.
    let id: Int
    let doorbell = Doorbell()

    init(hub: WatchHub, targets: [WatchTarget]) {
        self.hub = hub
        var seen = Set<WatchTarget>()
        self.targets = targets.filter { seen.insert($0).inserted }
        id = hub.newWatchID()
    }

    deinit { hub.unregister(id: id, targets: targets, ended: true) }

    /// Ends the watch: `next` returns nil from now on.
    public func cancel() {
        hub.unregister(id: id, targets: targets, ended: false)
        doorbell.ring()
    }

    private var cancelled: Bool { hub.state.withLock { $0.watches[id]?.cancelled ?? true } }

    /// The watch itself: it is its own iterator (one consumer).
    public func makeAsyncIterator() -> LedgerWatch { self }

    /// The next update; waits as long as it takes. Nil after ``cancel()``; throws
    /// `CancellationError` when the task is cancelled.
    public func next() async throws -> WatchUpdate? {
        while true {
            if let u = try await next(idle: .seconds(3600)) { return u }
            if cancelled { return nil }
        }
    }

    /// The next update, or nil when none came within `idle` (time for a progress note:
    /// ``progress()``). Throws `CancellationError` when the task is cancelled.
    public func next(idle: Duration) async throws -> WatchUpdate? {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: idle)
        while true {
            try Task.checkCancellation()
            if let u = take() { return u }
            let now = clock.now
            if now >= deadline || cancelled { return nil }
            await doorbell.wait(timeout: now.duration(to: deadline))
        }
    }

    /// The position up to which every change of the watched answers has been delivered,
    /// or nil while an update is waiting to be taken (`next` first). A watcher that
    /// resumes from it misses nothing.
    public func progress() -> UInt64? {
        hub.state.withLock { s in
            guard let r = s.watches[id] else { return s.processed }
            return r.dirtyHead < r.dirty.count ? nil : Swift.max(s.processed, r.delivered)
        }
    }

    /// The first marked member with something to deliver.
    private func take() -> WatchUpdate? {
        hub.state.withLock { $0.watches[id]?.take(targets) }
    }

    /// Marks every member for its first delivery, in the order of the targets: a
    /// snapshot, or (resuming) a change unless the entry's answer is the one with digest
    /// `sent[k]`. Before anything was taken (marks made meanwhile are folded in).
    func prime(snapshot: Bool, sent: [Int?]) {
        hub.state.withLock { $0.watches[id]?.prime(snapshot: snapshot, sent: sent) }
        doorbell.ring()
    }
}

extension WatchHub.Registration {
    /// The first marked member with something to deliver (of `targets`, the watch's).
    mutating func take(_ targets: [WatchTarget]) -> WatchUpdate? {
        while dirtyHead < dirty.count {
            let k = dirty[dirtyHead]
            dirtyHead += 1
            if dirtyHead == dirty.count {
                dirty.removeAll(keepingCapacity: true)
                dirtyHead = 0
            }
            members[k].dirty = false
            guard let e = members[k].entry, let answer = e.answer else { continue }
            let kind: WatchUpdate.Kind
            if members[k].snapshotDue {
                members[k].snapshotDue = false
                kind = .snapshot
            } else if members[k].sent == e.digest {
                continue
            } else {
                kind = .changed
            }
            members[k].sent = e.digest
            delivered = Swift.max(delivered, e.position)
            return WatchUpdate(target: targets[k], position: e.position, asOf: e.asOf, answer: answer, kind: kind)
        }
        return nil
    }

    /// Marks every member for its first delivery (``LedgerWatch/prime(snapshot:sent:)``).
    mutating func prime(snapshot: Bool, sent: [Int?]) {
        for k in members.indices {
            members[k].snapshotDue = snapshot
            members[k].sent = snapshot ? nil : sent[k]
            members[k].dirty = true
        }
        dirty = Array(members.indices)
        dirtyHead = 0
    }
}

extension Ledger {
    /// A watch of `target` (``LedgerWatch``): its answer at the head now, then each
    /// different answer. `from`, a position this log has reached, resumes a watcher that
    /// had the answers up to it: no snapshot, a `changed` with the current answer if it
    /// differs from the answer at `from`, then live. Throws the query's errors
    /// (`challenge_not_found`, `invalid_event` for a bad user key or a `from` beyond the head).
    public func watch(_ target: WatchTarget, from: UInt64? = nil) async throws -> LedgerWatch {
        try await watch([target], from: from)
    }

    /// A watch of several targets at once (one snapshot per target first; duplicates are
    /// watched once).
    public func watch(_ targets: [WatchTarget], from: UInt64? = nil) async throws -> LedgerWatch {
        let hub = feedHub.watches
        let w = LedgerWatch(hub: hub, targets: targets)
        await hub.register(w)
        do {
            let asOf = hub.now
            // The current answers: read after the registration, so no commit falls between.
            let current = try await watchAnswers(w.targets, asOf: asOf)
            var sent: [Int?] = Array(repeating: nil, count: w.targets.count)
            if let from {
                guard from <= current.position else {
                    throw LedgerError.invalid("position \(from) is beyond the head (\(current.position))", field: "from")
                }
                // The answer the watcher had at `from`: evaluated now, and when `from` was
                // committed (a change of time alone since then is at the same position, so
                // the watcher may not have it: then the current answer is sent again).
                let then = try await answersAt(w.targets, from, asOf: asOf)
                for k in w.targets.indices where then[k].settled.map({ $0.sameAnswer(as: then[k].now) }) ?? true {
                    sent[k] = then[k].now.digest
                }
            }
            for (t, a) in zip(w.targets, current.answers) {
                hub.apply(t, a.answer, deadline: a.deadline, position: current.position, asOf: asOf)
            }
            w.prime(snapshot: from == nil, sent: sent)
        } catch {
            w.cancel()
            throw error
        }
        return w
    }

    /// Waits until challenge `id` of `user` is no longer pending (approved, denied or
    /// expired: the sweeper's `challenge.expired` and the expiry time itself both end
    /// the wait), or `timeout` passed, and answers it as the plain query does then (the
    /// requester's view with `asRequester`). Throws `challenge_not_found` for an unknown
    /// challenge.
    public func awaitAnswer(user: String, challenge id: String, timeout: Duration, asRequester: Bool = false) async throws -> ChallengeView {
        let target = WatchTarget.challenge(id, of: user, asRequester: asRequester)
        let w = try await watch(target)
        defer { w.cancel() }
        let clock = ContinuousClock()
        let end = clock.now.advanced(by: timeout)
        while case let now = clock.now, now < end {
            guard let u = try await w.next(idle: now.duration(to: end)) else { break }
            if case .challenge(let c) = u.answer, c.status != "pending" { return c }
        }
        return try await challenge(id, of: user, target.options(position: nil, asOf: feedHub.watches.now))
    }

    /// The time watches evaluate answers at (default `Timestamp.now`; a server sets its own clock).
    package func setWatchClock(_ clock: @escaping @Sendable () -> Timestamp) {
        let hub = feedHub.watches
        hub.state.withLock { $0.clock = clock }
    }

    /// Watched targets and evaluations so far (tests, the benchmark).
    package var watchStatistics: (targets: Int, evaluations: Int, evaluated: Int) {
        let hub = feedHub.watches
        return hub.state.withLock { ($0.entryCount, $0.evaluations, $0.evaluated) }
    }
}
