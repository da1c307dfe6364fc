import AuthLedgerCore
import Foundation

/// The live event feed: recorded events from a position on, catch-up then live.
///
/// The feed *pulls*: while catching up, each iterator reads pages of committed events
/// in short read transactions; once caught up, it takes its pages from the ledger's
/// shared window of recent events, which one notifier per process fills (one read
/// per new batch, woken by a commit of this process or by the shortest poll interval
/// of the subscribers for commits of other processes). Nothing is pushed into a
/// subscriber, so a slow subscriber holds at most one page and never delays writers
/// or other subscribers; one that falls behind the window reads from the log where
/// it stands.
///
/// ```swift
/// for try await e in try await ledger.events(from: 1, filter: EventFilter(user: "alice")) {
///     print(e.seq, e.event.type.name)
/// }
/// ```
public struct LedgerEventFeed: AsyncSequence, Sendable {
    /// The feed delivers recorded events, in `seq` order.
    public typealias Element = RecordedEvent

    let ledger: Ledger
    /// The first `seq` the feed delivers (if it matches the filter).
    public let start: UInt64
    /// Which events the feed delivers.
    public let filter: EventFilter
    /// How often the head is re-read without a wake-up (commits of other processes);
    /// the shared notifier polls at the shortest interval of its subscribers.
    public let pollInterval: Duration
    /// Most events read per read transaction.
    public let pageSize: Int

    /// An iterator that catches up from `start`, then follows the log live.
    public func makeAsyncIterator() -> Iterator {
        Iterator(feed: self)
    }

    /// Reads pages of the log while catching up; once caught up, takes its pages from
    /// the ledger's shared `FeedHub` window and waits for the hub's ring.
    public struct Iterator: AsyncIteratorProtocol {
        let feed: LedgerEventFeed
        let waker: Waker
        var buffer: [FeedEntry] = []
        var index = 0
        /// The next `seq` to read.
        var position: UInt64

        /// Events already read: `next` returns them without waiting.
        public var buffered: Int { buffer.count - index }

        init(feed: LedgerEventFeed) {
            self.feed = feed
            self.position = feed.start
            // Registered before the first read, so no batch can slip between a read and a wait.
            self.waker = Waker(ledger: feed.ledger, poll: feed.pollInterval)
        }

        /// The next matching event; waits for one as long as it takes. Throws
        /// `CancellationError` when the task is cancelled.
        public mutating func next() async throws -> RecordedEvent? {
            while true {
                if let e = try await nextEntry(idle: .seconds(3600)) { return e.event }
            }
        }

        /// The next matching event, or nil when none arrived within `idle` (to send a
        /// heartbeat, say). Throws `CancellationError` when the task is cancelled.
        public mutating func next(idle: Duration) async throws -> RecordedEvent? {
            try await nextEntry(idle: idle)?.event
        }

        /// `next(idle:)` with the event's shared SSE frame when it came from the hub.
        package mutating func nextEntry(idle: Duration) async throws -> FeedEntry? {
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: idle)
            let hub = feed.ledger.feedHub
            while true {
                try Task.checkCancellation()
                if index < buffer.count {
                    defer { index += 1 }
                    return buffer[index]
                }
                switch hub.page(from: position, filter: feed.filter, limit: feed.pageSize) {
                case .window(let entries, let next):
                    position = next
                    buffer = entries
                    index = 0
                    continue
                case .behind:
                    // Catching up (or fallen behind the window): read the log itself.
                    try await readLog()
                    continue
                case .ahead:
                    // The hub has not read the newest commits yet, but a commit that was
                    // acknowledged before this call must be seen by it: look at the log's
                    // head (one read transaction) before waiting for the hub's ring.
                    if try await feed.ledger.head().seq >= position {
                        try await readLog()
                        continue
                    }
                    let now = clock.now
                    if now >= deadline { return nil }
                    await waker.doorbell.wait(timeout: now.duration(to: deadline))
                }
            }
        }

        /// One page from the log itself into the buffer.
        private mutating func readLog() async throws {
            let page = try await feed.ledger.feedPage(from: position, filter: feed.filter, limit: feed.pageSize)
            position = page.next
            buffer = page.events.map { FeedEntry(event: $0, frame: nil) }
            index = 0
            // A page with no match short of the head (a filter that matches little):
            // read on at once, waiting is only for events not yet committed.
            if buffer.isEmpty && !page.caughtUp { await Task.yield() }
        }
    }

    /// A subscriber of the ledger's feed hub for one iterator, removed when the iterator goes away.
    final class Waker: Sendable {
        let ledger: Ledger
        let doorbell = Doorbell()
        let id: Int

        init(ledger: Ledger, poll: Duration) {
            self.ledger = ledger
            id = ledger.feedHub.register(doorbell, poll: poll)
        }

        deinit { ledger.feedHub.unregister(id) }
    }
}

extension Ledger {
    /// The event feed from `from` (inclusive) on: catch-up, then live. `from: nil`
    /// means live from the head: the first event delivered is the first one committed
    /// after this call. Iterating is cancellable (cancel the task).
    public func events(from: UInt64?, filter: EventFilter, pollInterval: Duration = .milliseconds(250),
                       pageSize: Int = 256) async throws -> LedgerEventFeed {
        let start: UInt64
        if let from { start = Swift.max(from, 1) } else { start = try await head().seq + 1 }
        return LedgerEventFeed(ledger: self, start: start, filter: filter, pollInterval: pollInterval, pageSize: Swift.max(pageSize, 1))
    }

    /// The events a page of the feed scans at most.
    static let feedScanLimit = 4096

    /// One page of the feed: matching events with `seq >= from` (at most `limit`, and
    /// at most a few thousand scanned), and the position to continue from.
    func feedPage(from: UInt64, filter: EventFilter, limit: Int) async throws -> (events: [RecordedEvent], next: UInt64, caughtUp: Bool) {
        // The events the page may scan: a whole page when every one matches, else the most it scans.
        let scanning = filter.types == nil ? min(limit, Self.feedScanLimit) : Self.feedScanLimit
        var load = ReadLoad()
        if let user = filter.user { load.streamsAfter = [(user, max(from, 1) - 1, scanning)] } else { load.log = [(from, scanning)] }
        let page = try await read(load) { r -> (events: [RecordedEvent], next: UInt64, head: UInt64) in
            let head = try r.head().seq
            guard from <= head else { return ([], from, head) }
            var out: [RecordedEvent] = []
            if let user = filter.user {
                // The user's stream from `from` on (a search of its index, then a walk).
                var next = head + 1
                var scanned = 0
                try r.scanStream(user, afterSeq: max(from, 1) - 1) { _, seq in
                    guard seq <= head else { return false }
                    let e = try r.recordedEvent(at: seq)
                    if filter.matches(e) { out.append(e) }
                    scanned += 1
                    if out.count == limit || scanned == Self.feedScanLimit {
                        next = seq + 1
                        return false
                    }
                    return true
                }
                return (out, next, head)
            }
            var next = from
            var scanned = 0
            try r.scan(from: from) { seq, bytes in
                guard seq <= head else { return false }
                let e = try r.recordedEvent(seq, bytes)
                if filter.matches(e) { out.append(e) }
                next = seq + 1
                scanned += 1
                return out.count < limit && scanned < Self.feedScanLimit
            }
            return (out, next, head)
        }
        return (page.events, page.next, page.next > page.head)
    }
}
