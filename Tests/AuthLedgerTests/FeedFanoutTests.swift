@testable import AuthLedger
@testable import AuthLedgerCore
import Foundation
import Testing

/// The live feed's shared notifier: many subscribers of one ledger, fast and slow,
/// filtered or not, each get every matching event once and in order.
@Suite struct FeedFanoutTests {
    @Test func manySubscribersEachGetEveryEventInOrder() async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A small window, so that the slow subscribers fall behind it and read the log.
        ledger.feedHub.capacity = 24
        _ = try await ledger.append(try FeedFixture.inputs([FeedFixture.registerLine("alice"), FeedFixture.registerLine("bob")]))
        let commits = 150, subscribers = 60
        // Subscribers live from the head: seq 3 on. Every 6th follows alice only, every
        // 7th is slow (a pause every few events).
        var feeds: [LedgerEventFeed] = []
        for k in 0..<subscribers {
            feeds.append(try await ledger.events(from: nil, filter: k % 6 == 0 ? EventFilter(user: "alice") : .all, pollInterval: .seconds(5)))
        }
        let all = Array(UInt64(3)...UInt64(2 + 2 * commits))
        let alice = all.filter { $0 % 2 == 1 }
        let readers = feeds.enumerated().map { k, feed in
            Task { () throws -> [UInt64] in
                let want = k % 6 == 0 ? alice.count : all.count
                var seqs: [UInt64] = []
                var it = feed.makeAsyncIterator()
                while seqs.count < want, let e = try await it.next(idle: .seconds(120)) {
                    seqs.append(e.seq)
                    if k % 7 == 3, seqs.count % 4 == 0 { try await Task.sleep(for: .milliseconds(3)) }
                }
                return seqs
            }
        }
        // Appends in batches of two (alice, then bob), some right after the other.
        for k in 0..<commits {
            let lines = FeedFixture.accessLines("alice", count: 1, startMinute: k + 1) + FeedFixture.accessLines("bob", count: 1, startMinute: k + 1)
            _ = try await ledger.append(AppendRequest(try FeedFixture.inputs(lines)))
            if k % 10 == 0 { try await Task.sleep(for: .milliseconds(2)) }
        }
        for (k, r) in readers.enumerated() {
            let got = try await r.value
            #expect(got == (k % 6 == 0 ? alice : all), "subscriber \(k)")
        }
        // New batches were read for all of them by the hub, not once per subscriber.
        #expect(ledger.feedHub.reads > 0)
        #expect(ledger.feedHub.reads <= commits)
    }

    /// Read-your-writes: an event whose append was acknowledged is returned by a read that
    /// does not wait (`next(idle: .zero)`, what a poll with `returnImmediately` does), even
    /// when the shared notifier has not read that commit yet.
    @Test func anAcknowledgedEventIsSeenByAReadThatDoesNotWait() async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await ledger.append(try FeedFixture.inputs([FeedFixture.registerLine("alice")]))
        // A live subscriber keeps the hub busy with every commit.
        let live = try await ledger.events(from: nil, filter: .all, pollInterval: .seconds(5))
        let follower = Task { () throws -> Int in
            var n = 0
            var it = live.makeAsyncIterator()
            while n < 200, try await it.next(idle: .seconds(60)) != nil { n += 1 }
            return n
        }
        for k in 0..<200 {
            let acked = try await ledger.append(AppendRequest(try FeedFixture.inputs(FeedFixture.accessLines("alice", count: 1, startMinute: k + 1))))
            let seq = try #require(acked.appended.last?.seq)
            var it = try await ledger.events(from: seq, filter: .all).makeAsyncIterator()
            #expect(try await it.next(idle: .zero)?.seq == seq, "append \(k)")
        }
        #expect(try await follower.value == 200)
    }
}
