import AuthLedger
import AuthLedgerLMDB
import Foundation
import Synchronization

/// The `watch` phase: watches of projections (reference §5.7) on a ledger of its own.
/// Watches held and their memory, commit-to-watcher latency with many watchers at a fixed
/// commit rate, the challenge wait's latency, and the cost of idle watchers to appends
/// (the same appends with and without them, in alternated rounds of this run).
struct BenchWatch {
    let dir: String
    /// Watches held (one per user's devices answer).
    var held = 100_000
    /// Watchers consuming during the latency run, and its commit rate and length.
    var watchers = 10_000
    var commitsPerSecond = 1_000
    var seconds = 5.0
    /// Challenges waited for.
    var waits = 200
    /// Appends per turn of the idle-watcher comparison (and concurrent writers), and its rounds.
    var appends = 10_000
    var idleRounds = 5
    var writers = 64

    func run() async throws -> [(String, Double)] {
        let ledger = try await Ledger(lmdb: dir)
        defer { Task { await ledger.close() } }
        let users = (0..<held).map { "w\($0)" }
        try await seed(ledger, users)
        var out: [(String, Double)] = []

        // Watches held: one per user, none consumed; their memory and opening rate.
        let before = BenchRun.memory().anon
        let t0 = ContinuousClock.now
        var held = try await holdWatches(ledger, users)
        let opened = t0.duration(to: .now)
        let after = BenchRun.memory().anon
        out += [("watchers_held", Double(held.count)), ("bytes_per_watch", (after - before) * 1024 * 1024 / Double(held.count)),
                ("watches_opened_per_s", Double(held.count) / opened.seconds)]

        // The cost of idle watchers to appends (the watchers idle: nobody takes the updates),
        // in alternated rounds: the same appends with every user watched and with no watch
        // at all (every watch ended), in turns whose order flips each round, so that a
        // loaded machine's drift falls on both sides. The cost is the median of the rounds'
        // own ratios (one run of each side varied by ±20% on the shared machine).
        var plainRates: [Double] = [], watchedRates: [Double] = [], costs: [Double] = []
        for round in 0..<idleRounds {
            var plain = 0.0, watched = 0.0
            for watchedTurn in round % 2 == 0 ? [true, false] : [false, true] {
                if watchedTurn {
                    if held.isEmpty { held = try await holdWatches(ledger, users) }
                    watched = try await appendRate(ledger, users)
                } else {
                    for w in held { w.cancel() }
                    held = []
                    plain = try await appendRate(ledger, users)
                }
            }
            plainRates.append(plain)
            watchedRates.append(watched)
            costs.append((plain / watched - 1) * 100)
        }
        if held.isEmpty { held = try await holdWatches(ledger, users) }
        // Commit-to-watcher latency: `watchers` consumers of their own users' devices.
        let lat = try await latency(ledger, Array(users.prefix(watchers)), held: held)
        out += [("commit_to_watcher_p50_ms", lat.p50), ("commit_to_watcher_p99_ms", lat.p99),
                ("commit_to_watcher_delivered", Double(lat.delivered)), ("commits", Double(lat.commits)),
                ("commits_per_s_achieved", lat.rate)]
        let w = try await challengeWaits(ledger)
        out += [("challenge_wait_p50_ms", w.p50), ("challenge_wait_p99_ms", w.p99)]
        withExtendedLifetime(held) {}
        out += [("append_events_per_s_no_watchers", BenchRun.percentile(plainRates.sorted(), 0.5)),
                ("append_events_per_s_100k_idle_watchers", BenchRun.percentile(watchedRates.sorted(), 0.5)),
                ("append_cost_with_idle_watchers_pct", BenchRun.percentile(costs.sorted(), 0.5)),
                ("append_cost_with_idle_watchers_pct_min", costs.min() ?? 0),
                ("append_cost_with_idle_watchers_pct_max", costs.max() ?? 0)]
        return out
    }

    /// One watch of each user's devices, opened from 16 tasks.
    func holdWatches(_ ledger: Ledger, _ users: [String]) async throws -> [LedgerWatch] {
        try await withThrowingTaskGroup(of: [LedgerWatch].self) { group in
            let chunk = users.count / 16 + 1
            for k in stride(from: 0, to: users.count, by: chunk) {
                let slice = users[k..<min(users.count, k + chunk)]
                group.addTask {
                    var ws: [LedgerWatch] = []
                    for u in slice { ws.append(try await ledger.watch(.devices(u))) }
                    return ws
                }
            }
            var all: [LedgerWatch] = []
            for try await ws in group { all += ws }
            return all
        }
    }

    /// One device per user, in batches.
    func seed(_ ledger: Ledger, _ users: [String]) async throws {
        for k in stride(from: 0, to: users.count, by: 2_000) {
            let lines = users[k..<min(users.count, k + 2_000)].map { u in
                #"{"type":"device.registered","user":"\#(u)","at":"2026-01-05T08:00:00Z","data":{"deviceId":"d1","name":"Phone","kind":"mobile","binding":"permanent","via":"initial"}}"#
            }
            let inputs = try EventDecoder.decodeLines(Array(lines.joined(separator: "\n").utf8)).map(\.input)
            _ = try await ledger.append(inputs)
        }
    }

    /// Events per second of `appends` accesses by `writers` concurrent writers, over the users.
    func appendRate(_ ledger: Ledger, _ users: [String]) async throws -> Double {
        let t0 = ContinuousClock.now
        let n = appends, w = writers
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0..<w {
                group.addTask {
                    var i = k
                    while i < n {
                        _ = try await ledger.perform(.access(user: users[(i * 7919) % users.count], deviceId: "d1"))
                        i += w
                    }
                }
            }
            try await group.waitForAll()
        }
        return Double(n) / t0.duration(to: .now).seconds
    }

    /// Consumers of `users`' devices; one access per commit to a random one of them, at
    /// `commitsPerSecond`; the time from each commit's request to its watcher's update.
    func latency(_ ledger: Ledger, _ users: [String], held: [LedgerWatch]) async throws -> (p50: Double, p99: Double, delivered: Int, commits: Int, rate: Double) {
        let shared = LatencyRecord(users.count)
        let consumers = Task {
            await withTaskGroup(of: Void.self) { group in
                for (k, u) in users.enumerated() {
                    group.addTask {
                        guard let w = try? await ledger.watch(.devices(u)) else { return }
                        _ = try? await w.next()  // the snapshot
                        shared.ready.add(1, ordering: .relaxed)
                        while let update = try? await w.next() {
                            guard update.kind == .changed, let t = shared.sent.withLock({ $0[k] }) else { continue }
                            let ms = t.duration(to: .now).milliseconds
                            shared.lags.withLock { $0.append(ms) }
                        }
                    }
                }
            }
        }
        // Every consumer registered before the first commit.
        while shared.ready.load(ordering: .relaxed) < users.count { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(200))
        let (commits, rate) = try await BenchWatch.accesses(ledger, users, perSecond: commitsPerSecond, seconds: seconds, into: shared)
        try await Task.sleep(for: .seconds(1))
        consumers.cancel()
        _ = await consumers.value
        let sorted = shared.lags.withLock { $0 }.sorted()
        return (BenchRun.percentile(sorted, 0.5), BenchRun.percentile(sorted, 0.99), sorted.count, commits, rate)
    }

    /// One access a commit to a random one of `users`, at `perSecond` for `seconds`; each
    /// commit's request time goes in `record.sent` at the user's index. Returns the commits made
    /// and the rate achieved.
    static func accesses(_ ledger: Ledger, _ users: [String], perSecond: Int, seconds: Double,
                         into record: LatencyRecord) async throws -> (commits: Int, rate: Double) {
        let commits = Int(Double(perSecond) * seconds)
        let start = ContinuousClock.now
        var rng = SystemRandomNumberGenerator()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for c in 0..<commits {
                let due = start.advanced(by: .microseconds(Int64(c) * 1_000_000 / Int64(perSecond)))
                if due > .now { try await Task.sleep(until: due) }
                let k = Int.random(in: 0..<users.count, using: &rng)
                group.addTask {
                    record.sent.withLock { $0[k] = ContinuousClock.now }
                    _ = try await ledger.perform(.access(user: users[k], deviceId: "d1"))
                }
            }
            try await group.waitForAll()
        }
        return (commits, Double(commits) / start.duration(to: .now).seconds)
    }

    /// Challenges issued and approved while their requester waits: approval request to answer.
    func challengeWaits(_ ledger: Ledger) async throws -> (p50: Double, p99: Double) {
        var lags: [Double] = []
        for k in 0..<waits {
            let user = "w\(k)"
            let id = try await ledger.perform(.issueChallenge(user: user, requestingDeviceId: "new", action: "login", context: nil)).challengeId!
            let waiter = Task { try await ledger.awaitAnswer(user: user, challenge: id, timeout: .seconds(30)) }
            // The waiter's watch is registered (its snapshot read) before the approval.
            try await Task.sleep(for: .milliseconds(5))
            let t = ContinuousClock.now
            _ = try await ledger.perform(.approve(user: user, challengeId: id, deviceId: "d1", userVerified: true))
            let view = try await waiter.value
            guard view.status == "approved" else { throw LedgerError.invalid("challenge \(id) ended \(view.status)") }
            lags.append(t.duration(to: .now).milliseconds)
        }
        lags.sort()
        return (BenchRun.percentile(lags, 0.5), BenchRun.percentile(lags, 0.99))
    }
}

/// What the commit tasks and the consumers of the latency run share.
final class LatencyRecord: Sendable {
    /// When the last commit to each user was requested.
    let sent: Mutex<[ContinuousClock.Instant?]>
    /// Commit-to-watcher times, in milliseconds.
    let lags = Mutex<[Double]>([])
    /// Consumers that took their snapshot.
    let ready = Atomic<Int>(0)

    init(_ users: Int) { sent = Mutex(Array(repeating: nil, count: users)) }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
    var milliseconds: Double { seconds * 1000 }
}
