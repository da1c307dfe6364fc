import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import Foundation
import Synchronization

/// The `append_long_history` phase: does one append cost more for a user with a long past?
///
/// One user gets `pastChallenges` challenges (each issued and then approved or denied by its
/// trusted device) plus an OTP issued and verified for every 30 of them; a second user has one device
/// and nothing else. Then single `access` commands for the two users are interleaved through
/// the group-commit writer (`ledger.perform`, the server's path), each awaited durably, and
/// their latencies and writer-thread transaction times are compared in the same run.
struct BenchLongHistory {
    let base: String
    let pastChallenges: Int
    /// Appends measured per user.
    let appends: Int

    struct Result {
        var longP50: Double, freshP50: Double, longP99: Double, freshP99: Double
        var longTxn: Double, freshTxn: Double
        var longStateBytes: Int, freshStateBytes: Int
        var pastChallenges: Int, pastEvents: Int
        var values: [(String, Double)] {
            [("past_challenges", Double(pastChallenges)), ("past_events", Double(pastEvents)),
             ("long_p50_ms", longP50), ("fresh_p50_ms", freshP50), ("long_p99_ms", longP99), ("fresh_p99_ms", freshP99),
             ("long_txn_ms", longTxn), ("fresh_txn_ms", freshTxn),
             ("long_state_bytes", Double(longStateBytes)), ("fresh_state_bytes", Double(freshStateBytes)),
             ("p50_ratio", longP50 / freshP50), ("txn_ratio", longTxn / freshTxn)]
        }
    }

    static let start = Timestamp(rfc3339: "2026-01-05T08:00:00Z")!

    static func event(_ type: EventType, _ user: String, _ at: Timestamp, _ fields: [(Field, FieldValue)]) -> EventInput {
        var d = EventData()
        for (f, v) in fields { d[f] = v }
        return EventInput(event: Event(type: type, user: user, at: at, data: d))
    }

    static func register(_ user: String, _ device: String, via: String, _ at: Timestamp) -> EventInput {
        event(.registered, user, at, [(.deviceId, .string(device)), (.name, .string("Device \(device)")), (.kind, .string("mobile")),
                                      (.binding, .string("permanent")), (.via, .string(via))])
    }

    /// The long user's past: `pastChallenges` challenges 30 s apart, an OTP every 30 of them.
    func history(_ user: String) -> [EventInput] {
        var out: [EventInput] = [BenchLongHistory.register(user, "d1", via: "initial", BenchLongHistory.start)]
        out.reserveCapacity(pastChallenges * 2 + pastChallenges / 5 + 1)
        var t = BenchLongHistory.start
        for k in 0..<pastChallenges {
            t = t.adding(seconds: 30)
            let cid = "c\(k)"
            out.append(BenchLongHistory.event(.challengeIssued, user, t, [
                (.challengeId, .string(cid)), (.action, .string("transaction")), (.requestingDeviceId, .string("web")),
                (.expiresAt, .time(t.adding(seconds: 60)))]))
            out.append(BenchLongHistory.event(k % 3 == 0 ? .challengeDenied : .challengeApproved, user, t.adding(seconds: 5), [
                (.challengeId, .string(cid)), (.approverDeviceId, .string("d1"))]))
            // One OTP every 30 challenges (every 900 s: within 5 per hour).
            if k % 30 == 0 {
                let oid = "o\(k)"
                out.append(BenchLongHistory.event(.otpIssued, user, t.adding(seconds: 6), [
                    (.otpId, .string(oid)), (.channel, .string("email")), (.target, .string("u***@example.com")),
                    (.codeHash, .string(String(repeating: "ab", count: 32))), (.expiresAt, .time(t.adding(seconds: 306))),
                    (.maxAttempts, .int(5))]))
                out.append(BenchLongHistory.event(.otpVerified, user, t.adding(seconds: 7), [
                    (.otpId, .string(oid)), (.grantId, .string("g\(k)")), (.grantExpiresAt, .time(t.adding(seconds: 607)))]))
            }
        }
        return out
    }

    func run() async throws -> Result {
        let ledger = try await Ledger(lmdb: base + "/long-history")
        let past = history("long")
        var k = 0
        while k < past.count {
            let end = min(k + BenchRun.batch, past.count)
            _ = try await ledger.append(Array(past[k..<end]))
            k = end
        }
        _ = try await ledger.append([BenchLongHistory.register("fresh", "d1", via: "initial", BenchLongHistory.start)])
        // Commands run at a clock after the whole past; each call moves it by 1 ms.
        let clockStart = BenchLongHistory.start.adding(seconds: Int64(pastChallenges) * 30 + 3600)
        let tick = Tick(clockStart)
        var lat: [String: [Double]] = ["long": [], "fresh": []]
        var txn: [String: Double] = ["long": 0, "fresh": 0]
        // Warm up the writer's cache for both users, then interleave blocks of 10.
        for user in ["long", "fresh"] { _ = try await ledger.perform(.access(user: user, deviceId: "d1"), clock: tick.next) }
        var done = 0
        while done < appends {
            for user in ["long", "fresh"] {
                for _ in 0..<10 {
                    let before = ledger.writerStats
                    let s = DispatchTime.now().uptimeNanoseconds
                    _ = try await ledger.perform(.access(user: user, deviceId: "d1"), clock: tick.next)
                    lat[user]!.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e6)
                    txn[user]! += (ledger.writerStats.busySeconds - before.busySeconds) * 1000
                }
            }
            done += 10
        }
        let bytes = try await ledger.storage.readAsync({ ReadLoad(states: ["long", "fresh"]) }) { r in
            (try r.projectionState("long")?.count ?? 0, try r.projectionState("fresh")?.count ?? 0)
        }
        let l = lat["long"]!.sorted(), f = lat["fresh"]!.sorted()
        return Result(longP50: BenchRun.percentile(l, 0.5), freshP50: BenchRun.percentile(f, 0.5),
                      longP99: BenchRun.percentile(l, 0.99), freshP99: BenchRun.percentile(f, 0.99),
                      longTxn: txn["long"]! / Double(l.count), freshTxn: txn["fresh"]! / Double(f.count),
                      longStateBytes: bytes.0, freshStateBytes: bytes.1, pastChallenges: pastChallenges, pastEvents: past.count)
    }
}

/// A clock for the benchmark's commands: one millisecond later at every call.
final class Tick: Sendable {
    private let t: Mutex<Timestamp>
    init(_ t: Timestamp) { self.t = Mutex(t) }
    @Sendable func next() -> Timestamp {
        t.withLock { t in
            t = Timestamp(milliseconds: t.milliseconds + 1)
            return t
        }
    }
}
