import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Testing

/// Stores and fixture lines for the feed and subscription tests.
enum FeedFixture {
    /// A fresh store on `storage`, and the temporary directory to remove afterwards (the
    /// LMDB store, or a PostgreSQL store's key directory).
    static func temporaryLedger(_ storage: StorageKind = .lmdb) async throws -> (Ledger, String) {
        let store = storage.freshStore()
        let keys = storage.keyDirectory(for: store)
        return (try await storage.open(store, keys: keys), keys)
    }

    static func inputs(_ lines: [String]) throws -> [EventInput] {
        try EventDecoder.decodeLines(Array(lines.joined(separator: "\n").utf8)).map(\.input)
    }

    static func accessLines(_ user: String, count: Int, startMinute: Int = 1) -> [String] {
        (0..<count).map { k in
            let m = startMinute + k
            return #"{"type":"device.accessed","user":"\#(user)","at":"2026-03-01T\#(String(format: "%02d", 9 + m / 60)):\#(String(format: "%02d", m % 60)):00Z","data":{"deviceId":"d1"}}"#
        }
    }

    static func registerLine(_ user: String) -> String {
        #"{"type":"device.registered","user":"\#(user)","at":"2026-03-01T09:00:00Z","data":{"deviceId":"d1","name":"Phone one","kind":"mobile","binding":"permanent","via":"initial"}}"#
    }
}

@Suite struct EventFeedTests {
    @Test(arguments: StorageKind.all) func catchUpThenLiveWithoutGapOrDuplicate(_ storage: StorageKind) async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Given 1 + 5 events
        _ = try await ledger.append(try FeedFixture.inputs([FeedFixture.registerLine("alice")] + FeedFixture.accessLines("alice", count: 5)))
        // When a subscriber reads from 2 and 3 more are appended while it waits
        let feed = try await ledger.events(from: 2, filter: .all, pollInterval: .milliseconds(20))
        let reader = Task {
            var seqs: [UInt64] = []
            for try await e in feed {
                seqs.append(e.seq)
                if seqs.count == 8 { break }
            }
            return seqs
        }
        try await Task.sleep(for: .milliseconds(50))
        _ = try await ledger.append(try FeedFixture.inputs(FeedFixture.accessLines("alice", count: 3, startMinute: 10)))
        // Then it sees 2…9, each once, in order
        #expect(try await reader.value == Array(2...9))
    }

    @Test(arguments: StorageKind.all) func liveFromHeadDeliversOnlyLaterEvents(_ storage: StorageKind) async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await ledger.append(try FeedFixture.inputs([FeedFixture.registerLine("alice")]))
        let feed = try await ledger.events(from: nil, filter: .all)
        #expect(feed.start == 2)
        _ = try await ledger.append(try FeedFixture.inputs(FeedFixture.accessLines("alice", count: 1)))
        var it = feed.makeAsyncIterator()
        let e = try await it.next()
        #expect(e?.seq == 2)
        #expect(e?.event.type == .accessed)
    }

    @Test(arguments: StorageKind.all) func userAndTypeFiltersFindTheRightEvents(_ storage: StorageKind) async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Interleaved streams: alice at odd positions after the registrations
        _ = try await ledger.append(try FeedFixture.inputs([FeedFixture.registerLine("alice"), FeedFixture.registerLine("bob")]))
        for k in 0..<40 {
            _ = try await ledger.append(try FeedFixture.inputs(FeedFixture.accessLines(k % 2 == 0 ? "alice" : "bob", count: 1, startMinute: k + 1)))
        }
        let all = try await ledger.events(from: 1, user: "alice")
        for from: UInt64 in [1, 2, 3, 17, 30, 42] {
            var it = try await ledger.events(from: from, filter: EventFilter(user: "alice"), pollInterval: .milliseconds(10), pageSize: 3).makeAsyncIterator()
            var got: [UInt64] = []
            let want = all.filter { $0.seq >= from }.map(\.seq)
            while got.count < want.count, let e = try await it.next(idle: .milliseconds(200)) { got.append(e.seq) }
            #expect(got == want, "from \(from)")
        }
        var it = try await ledger.events(from: 1, filter: EventFilter(types: [.registered])).makeAsyncIterator()
        #expect(try await it.next()?.event.user == "alice")
        #expect(try await it.next()?.event.user == "bob")
        #expect(try await it.next(idle: .milliseconds(100)) == nil)
    }

    @Test(arguments: StorageKind.all) func cancellingTheTaskEndsIteration(_ storage: StorageKind) async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let feed = try await ledger.events(from: nil, filter: .all, pollInterval: .seconds(60))
        let reader = Task {
            for try await _ in feed {}
        }
        try await Task.sleep(for: .milliseconds(50))
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
    }

    @Test(arguments: StorageKind.all) func durableSubscriptionCheckpointsMoveForwardOnly(_ storage: StorageKind) async throws {
        let (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await ledger.append(try FeedFixture.inputs([FeedFixture.registerLine("alice")] + FeedFixture.accessLines("alice", count: 3)))
        let (s, created) = try await ledger.putSubscription(name: "push-sender", filter: EventFilter(user: "alice"))
        #expect(created && s.checkpoint == 0)
        #expect(try await ledger.acknowledge(subscription: "push-sender", through: 3).checkpoint == 3)
        #expect(try await ledger.acknowledge(subscription: "push-sender", through: 2).checkpoint == 3)
        await #expect(throws: LedgerError.self) { try await ledger.acknowledge(subscription: "push-sender", through: 99) }
        await #expect(throws: LedgerError.self) { try await ledger.acknowledge(subscription: "nobody", through: 1) }
        let again = try await ledger.putSubscription(name: "push-sender", filter: EventFilter(user: "alice", types: [.accessed]))
        #expect(!again.created && again.subscription.checkpoint == 3)
        #expect(try await ledger.subscription(named: "push-sender")?.filter.types == [.accessed])
        #expect(try await ledger.deleteSubscription(named: "push-sender"))
        #expect(try await ledger.subscription(named: "push-sender") == nil)
    }
}
