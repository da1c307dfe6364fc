@testable import AuthLedger
import AuthLedgerTestSupport
import Foundation
import Synchronization
import Testing

/// A time the test moves.
final class MovingClock: Sendable {
    private let time = Mutex(t("2026-03-01T09:00:00Z"))
    var now: Timestamp { time.withLock { $0 } }
    func advance(seconds: Int64) { time.withLock { $0 = $0.adding(seconds: seconds) } }
}

/// A ledger with a clock the test moves, shared by the watches (their `asOf`) and the commands.
final class WatchBench: Sendable {
    let ledger: Ledger
    let dir: String
    private let clock = MovingClock()

    init(_ storage: StorageKind) async throws {
        (ledger, dir) = try await FeedFixture.temporaryLedger(storage)
        ledger.setWatchClock { [clock] in clock.now }
    }

    var now: Timestamp { clock.now }
    func advance(seconds: Int64) { clock.advance(seconds: seconds) }

    /// The plain devices query's answer now.
    func devices(includeRevoked: Bool = false) async throws -> JSON {
        try await ledger.devices(of: "alice", QueryOptions(asOf: now, includeRevoked: includeRevoked)).json
    }

    @discardableResult
    func run(_ c: Command) async throws -> CommandResult {
        let n = now
        return try await ledger.perform(c, clock: { n })
    }

    func register(_ device: String, user: String = "alice", via: String? = nil) async throws {
        try await run(.register(user: user, deviceId: device, name: "Device \(device)", kind: "mobile", binding: "permanent", via: via))
    }

    /// A challenge from a device not trusted yet (one from a trusted device approves itself).
    func issue(_ user: String = "alice", from device: String = "tablet") async throws -> String {
        try await run(.issueChallenge(user: user, requestingDeviceId: device, action: "login", context: nil)).challengeId!
    }

    var head: UInt64 { get async throws { try await ledger.head().seq } }

    deinit { try? FileManager.default.removeItem(atPath: dir) }
}

extension LedgerWatch {
    /// The next update, failing the test when none comes in 10 s.
    func expectNext(_ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> WatchUpdate {
        try #require(try await next(idle: .seconds(10)), comment, sourceLocation: sourceLocation)
    }

    /// Updates until one at `position` or later (at most 10 s for each).
    func updates(through position: UInt64) async throws -> [WatchUpdate] {
        var out: [WatchUpdate] = []
        while out.last.map({ $0.position < position }) ?? true {
            guard let u = try await next(idle: .seconds(10)) else { break }
            out.append(u)
        }
        return out
    }
}

@Suite(.timeLimit(.minutes(2))) struct WatchTests {
    @Test(arguments: StorageKind.all) func aWatchSendsTheAnswerAtAPositionThenEachChange(_ storage: StorageKind) async throws {
        let b = try await WatchBench(storage)
        try await b.register("phone")
        let w = try await b.ledger.watch(.devices("alice"))
        let first = try await w.expectNext()
        #expect(first.kind == .snapshot && first.position == 1)
        let plain = try await b.devices()
        #expect(first.answer.json == plain)
        // Another user's commit changes nothing of alice's answer
        try await b.register("phone", user: "bob")
        // alice's second device (via admin: it opens a cooling window)
        try await b.register("laptop", via: "admin")
        let changed = try await w.expectNext()
        #expect(changed.kind == .changed && changed.position == 3)
        guard case .devices(let list) = changed.answer else { Issue.record("not a devices answer"); return }
        #expect(Set(list.devices.map(\.deviceId)) == ["phone", "laptop"] && list.cooling.active)
        let plainAfter = try await b.devices()
        #expect(changed.answer.json == plainAfter)
        #expect(w.progress() ?? 0 >= 3)
    }

    @Test(arguments: StorageKind.all) func eachProjectionIsWatchable(_ storage: StorageKind) async throws {
        let b = try await WatchBench(storage)
        try await b.register("phone")
        let w = try await b.ledger.watch([.cooling("alice"), .pending("alice"), .devices("alice"), .pending("alice")])
        #expect(w.targets.count == 3)
        let snapshots = [try await w.expectNext(), try await w.expectNext(), try await w.expectNext()]
        #expect(snapshots.map(\.kind) == [.snapshot, .snapshot, .snapshot])
        #expect(snapshots.map(\.target) == [.cooling("alice"), .pending("alice"), .devices("alice")])
        let id = try await b.issue()
        // Only the pending list changed
        let u = try await w.expectNext()
        #expect(u.target == .pending("alice") && u.kind == .changed && u.position == 2)
        #expect(u.answer.json.arrayValue?.first?["challengeId"] == .string(id))
        let c = try await b.ledger.watch(.challenge(id, of: "alice", asRequester: true))
        let view = try await c.expectNext()
        #expect(view.answer.json == .object([("challengeId", .string(id)), ("status", .string("pending"))]))
        try await b.run(.approve(user: "alice", challengeId: id, deviceId: "phone", userVerified: true))
        #expect(try await c.expectNext().answer.challengeStatus == "approved")
        // The pending list empties
        let emptied = try await w.expectNext()
        #expect(emptied.target == .pending("alice") && emptied.answer.json == .array([]))
        // An unknown challenge is refused as the query refuses it
        await #expect(throws: LedgerError.self) { try await b.ledger.watch(.challenge("nope", of: "alice")) }
        await #expect(throws: LedgerError.self) { try await b.ledger.watch(.devices("")) }
    }

    @Test(arguments: StorageKind.all) func aSharedTargetIsEvaluatedOncePerCommitHoweverManyWatchIt(_ storage: StorageKind) async throws {
        let b = try await WatchBench(storage)
        try await b.register("phone")
        var watches: [LedgerWatch] = []
        for _ in 0..<50 { watches.append(try await b.ledger.watch(.devices("alice"))) }
        for w in watches { #expect(try await w.expectNext().kind == .snapshot) }
        #expect(b.ledger.watchStatistics.targets == 1)
        let before = b.ledger.watchStatistics.evaluated
        try await b.register("laptop", via: "admin")
        for w in watches { #expect(try await w.expectNext().position == 2) }
        #expect(b.ledger.watchStatistics.evaluated - before == 1)
        // The registrations end with their watches. The hub may still hold the watches it
        // rang for a moment after they delivered (it rings outside its lock), so the last
        // reference can go on the hub's task: wait (at most 10 s) for it to let go.
        watches.removeAll()
        let clock = ContinuousClock(), deadline = clock.now.advanced(by: .seconds(10))
        while b.ledger.watchStatistics.targets != 0, clock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(b.ledger.watchStatistics.targets == 0)
    }

    @Test(arguments: StorageKind.all) func aSlowWatcherSkipsToTheLatestAndNeverGoesBack(_ storage: StorageKind) async throws {
        let b = try await WatchBench(storage)
        try await b.register("phone")
        let w = try await b.ledger.watch(.devices("alice", includeRevoked: true))
        _ = try await w.expectNext()
        for k in 0..<6 {
            if k > 0 { b.advance(seconds: 600) }
            try await b.register("d\(k)", via: "admin")
        }
        let head = try await b.head
        let seen = try await w.updates(through: head)
        #expect(seen.count <= 6 && seen.last?.position == head)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.position < $1.position })
        let plain = try await b.devices(includeRevoked: true)
        #expect(seen.last?.answer.json == plain)
    }

    @Test(arguments: StorageKind.all) func resumingSendsOnlyWhatChangedSinceThePosition(_ storage: StorageKind) async throws {
        let b = try await WatchBench(storage)
        try await b.register("phone")
        try await b.register("phone", user: "bob")
        // Nothing of alice changed since 1: no update, only progress
        let quiet = try await b.ledger.watch(.devices("alice"), from: 1)
        let none = try await quiet.next(idle: .milliseconds(300))
        #expect(none == nil)
        #expect(quiet.progress() ?? 0 >= 1)
        // alice changed after 2: one `changed` with the current answer
        try await b.register("laptop", via: "admin")
        let resumed = try await b.ledger.watch(.devices("alice"), from: 2)
        let u = try await resumed.expectNext()
        #expect(u.kind == .changed && u.position == 3)
        let plain = try await b.devices()
        #expect(u.answer.json == plain)
        // A position beyond the head is another log's
        await #expect(throws: LedgerError.self) { try await b.ledger.watch(.devices("alice"), from: 99) }
    }

    @Test(arguments: StorageKind.all) func answersThatChangeWithTimeAloneAreSentAtTheSamePosition(_ storage: StorageKind) async throws {
        let b = try await WatchBench(storage)
        try await b.register("phone")
        try await b.register("laptop", via: "admin")
        let id = try await b.issue()
        let w = try await b.ledger.watch([.cooling("alice"), .challenge(id, of: "alice"), .pending("alice")])
        for _ in 0..<3 { _ = try await w.expectNext() }
        // The challenge expires (60 s), the cooling window ends (300 s): no commit
        b.advance(seconds: 61)
        var got: [WatchTarget: WatchUpdate] = [:]
        for _ in 0..<2 { let u = try await w.expectNext(); got[u.target] = u }
        #expect(got[.challenge(id, of: "alice")]?.answer.challengeStatus == "not_approved")
        #expect(got[.pending("alice")]?.answer.json == .array([]))
        #expect(got.values.allSatisfy { $0.position == 3 && $0.kind == .changed })
        b.advance(seconds: 300)
        let ended = try await w.expectNext()
        #expect(ended.target == .cooling("alice") && ended.position == 3)
        #expect(ended.answer.json["active"] == .bool(false))
        // A watcher that resumes from the same position after the window ended gets the ending
        let resumed = try await b.ledger.watch(.cooling("alice"), from: 3)
        #expect(try await resumed.expectNext().answer.json["active"] == .bool(false))
    }

    @Test(arguments: StorageKind.all) func theRequesterWaitsForTheAnswer(_ storage: StorageKind) async throws {
        let b = try await WatchBench(storage)
        try await b.register("phone")
        let approved = try await b.issue()
        async let answer = b.ledger.awaitAnswer(user: "alice", challenge: approved, timeout: .seconds(30), asRequester: true)
        try await Task.sleep(for: .milliseconds(50))
        try await b.run(.approve(user: "alice", challengeId: approved, deviceId: "phone", userVerified: true))
        let view = try await answer
        #expect(view.status == "approved" && view.outcome == nil)
        // Denied: the owner's view says so
        let denied = try await b.issue()
        async let d = b.ledger.awaitAnswer(user: "alice", challenge: denied, timeout: .seconds(30))
        try await b.run(.deny(user: "alice", challengeId: denied, deviceId: "phone"))
        #expect(try await d.outcome == .denied)
        // Still pending after the timeout
        let open = try await b.issue()
        #expect(try await b.ledger.awaitAnswer(user: "alice", challenge: open, timeout: .milliseconds(200)).status == "pending")
        // Expired by time alone
        async let e = b.ledger.awaitAnswer(user: "alice", challenge: open, timeout: .seconds(30))
        b.advance(seconds: 120)
        #expect(try await e.outcome == .expired)
        #expect(b.ledger.watchStatistics.targets == 0)
    }

    @Test(arguments: StorageKind.all) func anErasureChangesTheAnswer(_ storage: StorageKind) async throws {
        let b = try await WatchBench(storage)
        try await b.register("phone")
        let w = try await b.ledger.watch(.devices("alice"))
        _ = try await w.expectNext()
        _ = try await b.ledger.erase("alice", now: b.now)
        let u = try await w.expectNext()
        #expect(u.answer.json["erased"] == .bool(true))
    }
}

@Suite struct ChallengeWaitCLITests {
    @Test func theCLIWaitsForTheAnswer() async throws {
        let store = Support.tempDir("authledger-cli-wait") + "/store"
        let now = "2026-06-01T09:00:10Z"
        @Sendable func al(_ args: String...) throws -> CLIRun { try CLI.run(Array(args) + ["--store", store, "--now", now]) }
        #expect(try al("register", "alice", "phone", "--name", "My Phone").status == 0)
        let id = try #require(try al("issue-challenge", "alice", "--device", "tablet", "--json").json?["challengeId"]?.stringValue)
        // Still pending after the wait: the plain answer
        let open = try al("challenge", "alice", id, "--wait", "1", "--json")
        #expect(open.status == 0 && open.json?["status"] == .string("pending"), "\(open.stderr)")
        // Another process approves while this one waits
        let waiting = Task.detached { try al("challenge", "alice", id, "--wait", "30", "--as-requester") }
        try await Task.sleep(for: .milliseconds(500))
        #expect(try al("approve", "alice", id, "--device", "phone").status == 0)
        let answered = try await waiting.value
        #expect(answered.status == 0 && answered.stdout == "\(id): approved\n", "\(answered.stderr)")
        #expect(try al("challenge", "alice", id, "--wait", "0").status == 2)
        #expect(try al("challenge", "alice", id, "--wait", "5", "--at", "1").status == 2)
    }
}
