import AuthLedgerCore
import Foundation
import Synchronization

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
final class WatchHub: Sendable {
    final class Entry {
        let target: WatchTarget
        /// The latest answer (nil before the first evaluation).
        var answer: WatchAnswer?
        var digest = 0
        var position: UInt64 = 0
        var asOf = Timestamp.epoch
        /// When the answer next changes by time alone.
        var deadline: Timestamp?
        /// The watches of this target: the target's index in each, by watch id.
        var watches: [Int: Int] = [:]

        init(_ target: WatchTarget) { self.target = target }
    }

    /// A watch's side of the hub: its members and the marks since it last looked.
    struct Registration {
        var members: [LedgerWatch.Member]
        /// Indices of members marked since the watcher last looked, from `dirtyHead` on.
        var dirty: [Int] = []
        var dirtyHead = 0
        var cancelled = false
        /// The highest position delivered.
        var delivered: UInt64 = 0
        let doorbell: Doorbell

        /// Marks member `k` (once until it is taken); the doorbell to ring.
        mutating func mark(_ k: Int) -> Doorbell {
            if !members[k].dirty {
                members[k].dirty = true
                dirty.append(k)
            }
            return doorbell
        }
    }

    struct State {
        weak var ledger: Ledger?
        /// Entries by user, then target.
        var entries: [String: [WatchTarget: Entry]] = [:]
        var entryCount = 0
        /// When entries' answers change by time alone; stale items are skipped when popped.
        var deadlines = MinHeap<Timestamp, WatchTarget>()
        /// The registered watches, by id.
        var watches: [Int: Registration] = [:]
        var running = false
        /// The hub's start (its head read): every registration waits for it before its first read.
        var startup: Task<Void, Never>?
        /// Every event up to this position was evaluated for every entry (the progress position).
        var processed: UInt64 = 0
        /// The time answers are evaluated at (the server's clock; tests move it).
        var clock: @Sendable () -> Timestamp = Timestamp.now
        /// Evaluations (reads) and targets evaluated in them (tests, the benchmark).
        var evaluations = 0
        var evaluated = 0
    }

    /// The hub's state and its watches' (their members and marks).
    let state = Mutex(State())
    private let lastWatchID = Atomic<Int>(0)

    func attach(_ ledger: Ledger) { state.withLock { $0.ledger = ledger } }

    var now: Timestamp { state.withLock { $0.clock }() }

    /// A new watch's id.
    func newWatchID() -> Int { lastWatchID.add(1, ordering: .relaxed).newValue }

    // MARK: Registration

    /// Registers `watch` for its targets (creating the entries it is the first of) and
    /// waits for the hub's task to have read its start position, so that every commit
    /// after the watch's first read reaches it.
    func register(_ watch: LedgerWatch) async {
        let start: Task<Void, Never>? = state.withLock { s in
            var members = Array(repeating: LedgerWatch.Member(), count: watch.targets.count)
            for (k, t) in watch.targets.enumerated() {
                let e: Entry
                if let found = s.entries[t.user]?[t] {
                    e = found
                } else {
                    e = Entry(t)
                    s.entries[t.user, default: [:]][t] = e
                    s.entryCount += 1
                }
                e.watches[watch.id] = k
                members[k].entry = e
            }
            s.watches[watch.id] = Registration(members: members, doorbell: watch.doorbell)
            if !s.running {
                s.running = true
                s.startup = Task { [weak self] in await self?.start() }
            }
            return s.startup
        }
        await start?.value
    }

    /// Removes watch `id`'s registrations (its entries go with their last watch) and,
    /// when the watch is gone (`ended`), its members; otherwise marks it cancelled.
    func unregister(id: Int, targets: [WatchTarget], ended: Bool) {
        state.withLock { s in
            for t in targets {
                guard let e = s.entries[t.user]?[t] else { continue }
                e.watches[id] = nil
                if e.watches.isEmpty {
                    s.entries[t.user]?[t] = nil
                    if s.entries[t.user]?.isEmpty == true { s.entries[t.user] = nil }
                    s.entryCount -= 1
                }
            }
            if ended {
                s.watches[id] = nil
            } else {
                s.watches[id]?.cancelled = true
            }
        }
    }

    // MARK: Answers

    /// Makes `answer` (at `position`, evaluated at `asOf`) the entry's answer unless the
    /// entry has a newer one; marks and rings the entry's watches when it differs from
    /// the entry's last answer.
    func apply(_ target: WatchTarget, _ answer: WatchAnswer, deadline: Timestamp?, position: UInt64, asOf: Timestamp) {
        let digest = answer.digest
        // The doorbells are rung after the lock.
        let marked: [Doorbell] = state.withLock { s in
            guard let e = s.entries[target.user]?[target] else { return [] }
            if e.answer != nil, (position, asOf.milliseconds) < (e.position, e.asOf.milliseconds) { return [] }
            let changed = e.answer.map { !$0.sameAnswer(as: answer) } ?? true
            e.answer = answer
            e.digest = digest
            e.position = position
            e.asOf = asOf
            if e.deadline != deadline {
                e.deadline = deadline
                if let deadline { s.deadlines.push(deadline, target) }
            }
            guard changed else { return [] }
            var out: [Doorbell] = []
            for (id, k) in e.watches {
                if let doorbell = s.watches[id]?.mark(k) { out.append(doorbell) }
            }
            return out
        }
        for d in marked { d.ring() }
    }

    /// Evaluates `targets` in one read at the head and applies the answers. A target
    /// whose query fails (a store error) keeps its answer until the next evaluation.
    func evaluate(_ targets: [WatchTarget]) async {
        guard let ledger = state.withLock({ $0.ledger }), !targets.isEmpty else { return }
        let asOf = now
        // One read for all; a failing target alone is retried on its own.
        if let r = try? await ledger.watchAnswers(targets, asOf: asOf) {
            state.withLock { s in
                s.evaluations += 1
                s.evaluated += targets.count
            }
            for (t, a) in zip(targets, r.answers) { apply(t, a.answer, deadline: a.deadline, position: r.position, asOf: asOf) }
            return
        }
        guard targets.count > 1 else { return }
        for t in targets { await evaluate([t]) }
    }

    // MARK: The hub's task

    private func start() async {
        let head = (try? await state.withLock({ $0.ledger })?.head().seq) ?? 0
        state.withLock { $0.processed = head }
        Task.detached(priority: .medium) { [weak self] in await WatchHub.run(self, from: head + 1) }
    }

    private static func run(_ weakHub: WatchHub?, from start: UInt64) async {
        weak let hub = weakHub
        guard let ledger = hub?.state.withLock({ $0.ledger }),
              var feed = try? await ledger.events(from: start, filter: .all).makeAsyncIterator() else {
            hub?.stopped()
            return
        }
        while true {
            guard let h = hub else { return }
            // Stop when no entry is left (a registration restarts the hub).
            let stop: Bool = h.state.withLock { s in
                if s.entryCount == 0 {
                    s.running = false
                    s.startup = nil
                    return true
                }
                return false
            }
            if stop { return }
            let clock = h.now
            // Until the next deadline, and at most 250 ms while there is one (a deadline
            // added meanwhile is then met within 250 ms), a second otherwise.
            let sleep = h.state.withLock { $0.deadlines.first?.key }.map { d -> Duration in
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
            if let last { h.state.withLock { $0.processed = Swift.max($0.processed, last) } }
        }
    }

    private func stopped() {
        state.withLock { s in
            s.running = false
            s.startup = nil
        }
    }

    /// The targets of `users`' entries and those whose deadline passed at `now`.
    private func due(users: Set<String>, at now: Timestamp) -> [WatchTarget] {
        state.withLock { s in
            var out: [WatchTarget] = []
            for u in users { if let es = s.entries[u] { out.append(contentsOf: es.keys) } }
            var seen = Set(out)
            while let first = s.deadlines.first, first.key <= now, let due = s.deadlines.pop() {
                let (d, t) = (due.key, due.value)
                // Stale heap items: the entry is gone or its deadline moved.
                guard let e = s.entries[t.user]?[t], e.deadline == d, !seen.contains(t) else { continue }
                seen.insert(t)
                out.append(t)
            }
            return out
        }
    }
}
