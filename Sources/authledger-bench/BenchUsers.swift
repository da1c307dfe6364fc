import AuthLedger
import Foundation

/// `users_page`: `GET /v1/users`'s read (`Ledger.users`) on a store of `users` users (one
/// `device.registered` each, appended in bulk batches): a page of 50 by a random key prefix,
/// and the page after a random key, whose cost must not grow with the number of users. Each
/// in wall time and in the thread's CPU time (which a loaded machine's waits do not inflate:
/// the read runs on the calling thread, LMDB reading in place).
struct BenchUsers {
    let users: Int
    let dir: String

    /// The users' keys: `u` and seven digits, so that a prefix of four digits picks about a
    /// thousand of them among a million, and one of five about a hundred.
    func key(_ i: Int) -> String { "u" + String(String(i + 10_000_000).dropFirst()) }

    func run() async throws -> [(String, Double)] {
        let ledger = try await Ledger(lmdb: dir)
        let start = BenchRun.start
        let t0 = DispatchTime.now().uptimeNanoseconds
        do {
            var i = 0
            while i < users {
                let batch = (i..<min(i + BenchRun.batch, users)).map { n in
                    var d = EventData()
                    d[.deviceId] = .string("d1"); d[.name] = .string("Phone"); d[.kind] = .string("mobile")
                    d[.binding] = .string("permanent"); d[.via] = .string("initial")
                    return EventInput(event: Event(type: .registered, user: key(n), at: start, data: d))
                }
                _ = try await ledger.append(batch)
                i += batch.count
            }
        }
        let fill = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        var rng = SplitMix64(seed: 7)
        func random() -> Int { Int(rng.next() % UInt64(users)) }
        // A prefix page (four digits of a random key) and the page after a random key.
        func threadCPU() -> Int64 {
            var ts = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
            return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
        }
        func samples(_ n: Int, _ page: () throws -> UserPage) async throws -> (wall: [Double], cpu: [Double]) {
            var wall: [Double] = [], cpu: [Double] = []
            wall.reserveCapacity(n)
            for _ in 0..<n {
                let p = try page()
                let s = DispatchTime.now().uptimeNanoseconds, c = threadCPU()
                let list = try await ledger.users(p)
                cpu.append(Double(max(0, threadCPU() - c)) / 1e3)
                wall.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e3)
                precondition(!list.users.isEmpty)
            }
            return (wall.sorted(), cpu.sorted())
        }
        _ = try await samples(200) { try UserPage(prefix: String(key(random()).prefix(5))) }  // warm up
        let prefix = try await samples(5_000) { try UserPage(prefix: String(key(random()).prefix(5))) }
        let after = try await samples(5_000) { try UserPage(after: key(random() % max(users - 50, 1))) }
        await ledger.close()
        return [("users", Double(users)), ("fill_users_per_s", Double(users) / fill),
                ("prefix_p50_us", BenchRun.percentile(prefix.wall, 0.5)), ("prefix_p99_us", BenchRun.percentile(prefix.wall, 0.99)),
                ("prefix_cpu_p50_us", BenchRun.percentile(prefix.cpu, 0.5)), ("prefix_cpu_p99_us", BenchRun.percentile(prefix.cpu, 0.99)),
                ("after_p50_us", BenchRun.percentile(after.wall, 0.5)), ("after_p99_us", BenchRun.percentile(after.wall, 0.99)),
                ("after_cpu_p99_us", BenchRun.percentile(after.cpu, 0.99))]
    }
}
