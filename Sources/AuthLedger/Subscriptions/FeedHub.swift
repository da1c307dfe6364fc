import AuthLedgerCore
import Foundation
import Synchronization

/// One live event, as every caught-up subscriber of this process shares it: the
/// recorded event and, when it came from the hub, its Server-Sent Events frame built
/// once for all of them.
package struct FeedEntry: Sendable {
    package let event: RecordedEvent
    /// The SSE frame (`FeedEntry.sseFrame(event)`), nil when the entry was read from
    /// the log by one subscriber (the frame is then built by whoever sends it).
    package let frame: String?

    /// `id:` the seq, `event:` the type, `data:` the recorded form (one line), blank line.
    package static func sseFrame(_ e: RecordedEvent) -> String {
        "id: \(e.seq)\nevent: \(e.event.type.name)\ndata: " + e.json.serialized() + "\n\n"
    }
}

/// The process' one notifier and reader of new commits for the live feeds of a
/// ledger. Instead of each caught-up subscriber polling the head on its own timer
/// and reading each new batch on its own, the hub wakes on a commit of this process
/// (a commit observer) or on the shortest poll interval of its subscribers (commits
/// of other processes), reads the new events once, keeps the latest `capacity` of
/// them in a window, and rings the subscribers' doorbells.
///
/// Nothing is pushed into a subscriber: each one takes its own filtered page from
/// the window when its position is inside it, so a slow subscriber never holds
/// the others up, and memory is the window (bounded) plus one page per subscriber.
/// A subscriber behind the window's start reads from the log itself, as in
/// catch-up. The hub's task runs only while subscribers are registered.
final class FeedHub: Sendable {
    private struct State {
        /// Most events kept for caught-up subscribers.
        var capacity = 8192
        weak var ledger: Ledger?
        var subscribers: [Int: (bell: Doorbell, poll: Duration)] = [:]
        var nextID = 0
        var running = false
        /// The last seq read into the window (the hub's head).
        var known: UInt64 = 0
        /// The window: events `windowStart ... known` (a ring of `capacity` at most).
        var window: [FeedEntry] = []
        var windowFirst = 0
        var windowStart: UInt64 = 1
        var reads = 0
    }

    private let state = Mutex(State())
    /// Rung by the commit observer: new events to read.
    let commits = Doorbell()

    /// Most events kept for caught-up subscribers (set before the first subscriber:
    /// tests make it small so that slow subscribers fall behind it).
    var capacity: Int {
        get { state.withLock { $0.capacity } }
        set { state.withLock { $0.capacity = newValue } }
    }

    /// Batches read and events in them (for tests and the benchmark).
    var reads: Int { state.withLock { $0.reads } }

    private var ledger: Ledger? { state.withLock { $0.ledger } }

    /// The registry of the ledger's watches of projections, fed by this hub's window.
    let watches = WatchHub()

    init() {}

    func attach(_ ledger: Ledger) {
        state.withLock { $0.ledger = ledger }
        watches.attach(ledger)
    }

    /// Registers a subscriber's doorbell (rung after each batch read into the window).
    func register(_ bell: Doorbell, poll: Duration) -> Int {
        var start = false
        let id: Int = state.withLock { s in
            s.nextID += 1
            s.subscribers[s.nextID] = (bell, poll)
            if !s.running {
                s.running = true
                start = true
                // Until the hub's task has read the head (`start`): an empty window at
                // the last head known, positions up to it read the log.
                s.window = []
                s.windowFirst = 0
                s.windowStart = s.known + 1
            }
            return s.nextID
        }
        if start {
            Task.detached(priority: .medium) { [weak self] in await FeedHub.run(self) }
        } else {
            // A shorter poll interval takes effect at once.
            commits.ring()
        }
        return id
    }

    func unregister(_ id: Int) {
        state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        commits.ring()
    }

    /// A fresh window at the current head, read without blocking a thread: older
    /// positions read the log. The subscribers are rung: one that waited for events now
    /// behind the window (committed before this read) reads them from the log.
    private func start() async {
        guard let ledger, let head = try? await ledger.head().seq else { return }
        let bells: [Doorbell] = state.withLock { s in
            s.known = head
            s.window = []
            s.windowFirst = 0
            s.windowStart = head + 1
            return s.subscribers.values.map(\.bell)
        }
        for b in bells { b.ring() }
    }

    private static func run(_ weakHub: FeedHub?) async {
        weak var hub = weakHub
        await hub?.start()
        while true {
            guard let h = hub else { return }
            let poll: Duration? = h.state.withLock { s in
                if s.subscribers.isEmpty { s.running = false; return nil }
                return s.subscribers.values.map(\.poll).min()
            }
            guard let poll else { return }
            let bell = h.commits
            await bell.wait(timeout: poll)
            await hub?.refresh()
        }
    }

    /// Reads the events committed since the last read (at most `capacity`: older ones
    /// are read from the log by whoever still needs them) and rings every subscriber.
    func refresh() async {
        guard let ledger, var head = try? await ledger.head().seq else { return }
        // A pipelined commit of this process not yet durable: not delivered until it is
        // (the writer's commit observer rings again then).
        if let from = ledger.writer.nonDurableFrom, from > 0 { head = Swift.min(head, from - 1) }
        let (from, capacity) = state.withLock { ($0.known + 1, $0.capacity) }
        guard head >= from else { return }
        let first = head - from + 1 > UInt64(capacity) ? head - UInt64(capacity) + 1 : from
        var batch: [FeedEntry] = []
        var position = first
        while position <= head {
            guard let page = try? await ledger.feedPage(from: position, filter: .all, limit: 4096) else { return }
            for e in page.events where e.seq <= head { batch.append(FeedEntry(event: e, frame: FeedEntry.sseFrame(e))) }
            if page.next <= position { break }
            position = page.next
        }
        guard let last = batch.last?.event.seq else { return }
        let bells: [Doorbell] = state.withLock { s in
            if first != s.known + 1 {
                // Too many at once: the window restarts at the batch.
                s.window = []
                s.windowFirst = 0
                s.windowStart = first
            }
            // An erasure rewrote earlier events' personal values: only what was read
            // after it (the erasure event on) may be served from the window.
            if let erased = batch.lastIndex(where: { $0.event.event.type == .userErased }) {
                s.window = []
                s.windowFirst = 0
                s.windowStart = batch[erased].event.seq
                batch.removeFirst(erased)
            }
            for entry in batch {
                if s.window.count < s.capacity {
                    s.window.append(entry)
                } else {
                    s.window[s.windowFirst] = entry
                    s.windowFirst = (s.windowFirst + 1) % s.capacity
                    s.windowStart += 1
                }
            }
            s.known = last
            s.reads += 1
            return s.subscribers.values.map(\.bell)
        }
        for b in bells { b.ring() }
    }

    enum Page {
        /// Entries from the window (maybe none) and the position to continue from.
        case window([FeedEntry], next: UInt64)
        /// The position is before the window: read the log.
        case behind
        /// The position is past what the hub has read: wait for a ring.
        case ahead
    }

    /// The matching entries from `position` on (at most `limit`).
    func page(from position: UInt64, filter: EventFilter, limit: Int) -> Page {
        state.withLock { s in
            guard position <= s.known else { return .ahead }
            guard position >= s.windowStart, !s.window.isEmpty else { return .behind }
            var out: [FeedEntry] = []
            var k = Int(position - s.windowStart)
            var next = position
            while k < s.window.count {
                let entry = s.window[(s.windowFirst + k) % s.window.count]
                next = entry.event.seq + 1
                k += 1
                if filter.matches(entry.event) {
                    out.append(entry)
                    if out.count == limit { break }
                }
            }
            return .window(out, next: next)
        }
    }
}
