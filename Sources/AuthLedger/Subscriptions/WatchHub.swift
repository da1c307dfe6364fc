import AuthLedgerCore
import Foundation

/// The registry of a ledger's watches: one entry per watched target, however many
/// watches share it, with the target's latest answer. One task follows the event feed
/// (the feed hub's shared window: the notifier of the event feed) and, for each batch of
/// new events, evaluates the entries of the users they touch once, in one read; it also
/// re-evaluates an entry when its answer changes by time alone (a deadline heap). A
/// changed answer marks each watch of the entry and rings its doorbell: nothing is
/// pushed, a watch takes the entry's latest answer when it next looks (levels, not
/// edges: a slow watch skips intermediate answers, never the latest).
///
/// No task per watch: a watch is its registration (a few words per target) and a
/// doorbell. The hub's task runs only while entries exist.
// @unchecked: every field is guarded by `lock`; `ledger` is weak and set once.
final class WatchHub: @unchecked Sendable {
    final class Entry {
        let target: WatchTarget
        /// The latest answer (nil before the first evaluation).
        var answer: WatchAnswer?
        var digest = 0
        var position: UInt64 = 0
        var asOf = Timestamp.epoch
        /// When the answer next changes by time alone.
        var deadline: Timestamp?
        /// The watches of this target, by watch id, with the target's index in each.
        var watches: [Int: (watch: Weak, index: Int)] = [:]

        init(_ target: WatchTarget) { self.target = target }
    }

    struct Weak { weak var watch: LedgerWatch? }

    private weak var ledger: Ledger?
    let lock = NSLock()
    /// Entries by user, then target.
    private var entries: [String: [WatchTarget: Entry]] = [:]
    private(set) var entryCount = 0
    /// When entries' answers change by time alone; stale items are skipped when popped.
    private var deadlines = MinHeap<Timestamp, WatchTarget>()
    private var nextWatchID = 0
    private var running = false
    /// The hub's start (its head read): every registration waits for it before its first read.
    private var startup: Task<Void, Never>?
    /// Every event up to this position was evaluated for every entry (the progress position).
    private(set) var processed: UInt64 = 0
    /// The time answers are evaluated at (the server's clock; tests move it).
    var clock: @Sendable () -> Timestamp = Timestamp.now
    /// Evaluations (reads) and targets evaluated in them (tests, the benchmark).
    private(set) var evaluations = 0
    private(set) var evaluated = 0

    func attach(_ ledger: Ledger) { self.ledger = ledger }

    var now: Timestamp { lock.withLock { clock }() }

    // MARK: Registration

    /// Registers `watch` for its targets (creating the entries it is the first of) and
    /// waits for the hub's task to have read its start position, so that every commit
    /// after the watch's first read reaches it.
    func register(_ watch: LedgerWatch) async {
        let start: Task<Void, Never>? = lock.withLock {
            nextWatchID += 1
            watch.id = nextWatchID
            for (k, t) in watch.targets.enumerated() {
                let e: Entry
                if let found = entries[t.user]?[t] {
                    e = found
                } else {
                    e = Entry(t)
                    entries[t.user, default: [:]][t] = e
                    entryCount += 1
                }
                e.watches[watch.id] = (Weak(watch: watch), k)
                watch.members[k].entry = e
            }
            if !running {
                running = true
                startup = Task { [weak self] in await self?.start() }
            }
            return startup
        }
        await start?.value
    }

    /// Removes `watch`'s registrations (its entries go with their last watch).
    func unregister(id: Int, targets: [WatchTarget]) {
        lock.withLock {
            for t in targets {
                guard let e = entries[t.user]?[t] else { continue }
                e.watches[id] = nil
                if e.watches.isEmpty {
                    entries[t.user]?[t] = nil
                    if entries[t.user]?.isEmpty == true { entries[t.user] = nil }
                    entryCount -= 1
                }
            }
        }
    }

    // MARK: Answers

    /// Makes `answer` (at `position`, evaluated at `asOf`) the entry's answer unless the
    /// entry has a newer one; marks and rings the entry's watches when it differs from
    /// the entry's last answer.
    func apply(_ target: WatchTarget, _ answer: WatchAnswer, deadline: Timestamp?, position: UInt64, asOf: Timestamp) {
        let digest = answer.digest
        // The watches are collected (strong) and rung after the lock: the last reference to a
        // watch may go with them, and its deinit takes the lock.
        let marked: [LedgerWatch] = lock.withLock {
            guard let e = entries[target.user]?[target] else { return [] }
            if e.answer != nil, (position, asOf.milliseconds) < (e.position, e.asOf.milliseconds) { return [] }
            let changed = e.answer.map { !$0.sameAnswer(as: answer) } ?? true
            e.answer = answer
            e.digest = digest
            e.position = position
            e.asOf = asOf
            if e.deadline != deadline {
                e.deadline = deadline
                if let deadline { deadlines.push(deadline, target) }
            }
            guard changed else { return [] }
            var out: [LedgerWatch] = []
            for (_, w) in e.watches {
                guard let watch = w.watch.watch else { continue }
                if !watch.members[w.index].dirty {
                    watch.members[w.index].dirty = true
                    watch.dirty.append(w.index)
                }
                out.append(watch)
            }
            return out
        }
        for w in marked { w.doorbell.ring() }
    }

    /// Evaluates `targets` in one read at the head and applies the answers. A target
    /// whose query fails (a store error) keeps its answer until the next evaluation.
    func evaluate(_ targets: [WatchTarget]) async {
        guard let ledger, !targets.isEmpty else { return }
        let asOf = now
        // One read for all; a failing target alone is retried on its own.
        if let r = try? await ledger.watchAnswers(targets, asOf: asOf) {
            lock.withLock {
                evaluations += 1
                evaluated += targets.count
            }
            for (t, a) in zip(targets, r.answers) { apply(t, a.answer, deadline: a.deadline, position: r.position, asOf: asOf) }
            return
        }
        guard targets.count > 1 else { return }
        for t in targets { await evaluate([t]) }
    }

    // MARK: The hub's task

    private func start() async {
        let head = (try? await ledger?.head().seq) ?? 0
        lock.withLock { processed = head }
        Task.detached(priority: .medium) { [weak self] in await WatchHub.run(self, from: head + 1) }
    }

    private static func run(_ weakHub: WatchHub?, from start: UInt64) async {
        weak let hub = weakHub
        guard let ledger = hub?.ledger, var feed = try? await ledger.events(from: start, filter: .all).makeAsyncIterator() else {
            hub?.stopped()
            return
        }
        while true {
            guard let h = hub else { return }
            // Stop when no entry is left (a registration restarts the hub).
            let stop: Bool = h.lock.withLock {
                if h.entryCount == 0 {
                    h.running = false
                    h.startup = nil
                    return true
                }
                return false
            }
            if stop { return }
            let clock = h.now
            // Until the next deadline, and at most 250 ms while there is one (a deadline
            // added meanwhile is then met within 250 ms), a second otherwise.
            let sleep = h.lock.withLock { h.deadlines.first?.key }.map { d -> Duration in
                .milliseconds(Swift.max(0, Swift.min(250, d.milliseconds - clock.milliseconds)))
            } ?? .seconds(1)
            var users = Set<String>()
            var last: UInt64?
            do {
                if let e = try await feed.next(idle: sleep) {
                    users.insert(e.event.user ?? systemStream)
                    last = e.seq
                    while feed.buffered > 0, let e = try await feed.next(idle: .zero) {
                        users.insert(e.event.user ?? systemStream)
                        last = e.seq
                    }
                }
            } catch {
                // A store error: try again at the next turn.
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            let targets = h.due(users: users, at: h.now)
            await h.evaluate(targets)
            if let last { h.lock.withLock { h.processed = Swift.max(h.processed, last) } }
        }
    }

    private func stopped() {
        lock.withLock {
            running = false
            startup = nil
        }
    }

    /// The targets of `users`' entries and those whose deadline passed at `now`.
    private func due(users: Set<String>, at now: Timestamp) -> [WatchTarget] {
        lock.withLock {
            var out: [WatchTarget] = []
            for u in users { if let es = entries[u] { out.append(contentsOf: es.keys) } }
            var seen = Set(out)
            while let first = deadlines.first, first.key <= now, let due = deadlines.pop() {
                let (d, t) = (due.key, due.value)
                // Stale heap items: the entry is gone or its deadline moved.
                guard let e = entries[t.user]?[t], e.deadline == d, !seen.contains(t) else { continue }
                seen.insert(t)
                out.append(t)
            }
            return out
        }
    }
}
