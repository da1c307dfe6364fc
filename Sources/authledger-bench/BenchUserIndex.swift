import AuthLedger
import Foundation

/// `user_index` (reference section 14): the prefix tree over `users` users (default 10^6), as
/// the index keeps it in memory. Reported: the first build (users per second), an interval's
/// update (changed users per second on one core: 10,000 of them, half new, half updated), the
/// time to build one user's proof (p50/p99 over 10,000 users, half absent) and its size (the
/// siblings' 32 bytes each plus the terminal's key and commitment: p50/p99 bytes).
enum BenchUserIndex {
    static func run(users: Int = 1_000_000) -> [(String, Double)] {
        var tree = UserIndexTree()
        func commitment(_ i: Int, _ round: UInt64) -> Hash32 {
            UserIndex.commitment(count: round, streamHash: .zero, last: UInt64(i))
        }
        let keys = (0..<users).map { UserIndex.key("user-\($0)") }
        var t0 = DispatchTime.now().uptimeNanoseconds
        for (i, k) in keys.enumerated() { tree.set(k, commitment: commitment(i, 1)) }
        _ = tree.root()
        let build = Double(users) / (Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)

        let changed = 10_000
        t0 = DispatchTime.now().uptimeNanoseconds
        for j in 0..<changed {
            if j % 2 == 0 { tree.set(keys[(j * 7919) % users], commitment: commitment(j, 2)) }
            else { tree.set(UserIndex.key("new-\(j)"), commitment: commitment(j, 1)) }
        }
        let root = tree.root()
        let update = Double(changed) / (Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)

        var micros: [Double] = [], sizes: [Double] = []
        var checked = 0
        for j in 0..<10_000 {
            let key = j % 2 == 0 ? keys[(j * 104_729) % users] : UserIndex.key("absent-\(j)")
            let s = DispatchTime.now().uptimeNanoseconds
            let p = tree.proof(for: key)
            micros.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e3)
            if case .leaf = p.terminal { sizes.append(Double(p.siblings.count * 32 + 64)) } else { sizes.append(Double(p.siblings.count * 32)) }
            if p.root(for: key) == root { checked += 1 }
        }
        micros.sort()
        sizes.sort()
        func q(_ a: [Double], _ f: Double) -> Double { a[min(a.count - 1, Int(Double(a.count) * f))] }
        return [("users", Double(tree.count)), ("build_users_per_s", build), ("update_users_per_s", update),
                ("proof_p50_us", q(micros, 0.5)), ("proof_p99_us", q(micros, 0.99)),
                ("proof_bytes_p50", q(sizes, 0.5)), ("proof_bytes_p99", q(sizes, 0.99)),
                ("proofs_folding_to_root", Double(checked))]
    }
}

extension BenchRun {
    /// `user_index_append` (section 14's cost): the same workload appended into two fresh
    /// stores batch by batch in turn, one with stream hashes kept and the stored index
    /// brought up to date (and its entry appended) whenever a second of append time passed
    /// since the last update (the server's `--index-interval`), one without either (and the
    /// ratio without the updates' time: what the stream hashes alone cost). Also the
    /// stored index's update rate (changed users per second of update time) and the time to
    /// read one user's proof from the stored pages (p50/p99 over 2,000 proofs, half of absent users).
    func userIndexOverhead() async throws -> [(String, Double)] {
        let with = try await Ledger(lmdb: base + "/index-with")
        let without = try await Ledger(lmdb: base + "/index-without")
        without.appendSwitches.maintainStreamHashes.store(false, ordering: .relaxed)
        var a = BenchWorkload(total: events, start: BenchRun.start)
        var b = BenchWorkload(total: events, start: BenchRun.start)
        var wall = (0.0, 0.0), sinceUpdate = 0.0, updating = 0.0, changed = 0, updates = 0
        while true {
            let batchA = a.batch(BenchRun.batch), batchB = b.batch(BenchRun.batch)
            if batchA.isEmpty { break }
            let s = try await BenchRun.seconds { _ = try await with.append(batchA) }
            wall.0 += s
            sinceUpdate += s
            if sinceUpdate >= 1 {
                let u = try await BenchRun.seconds { changed += try await with.updateUserIndex()?.changed ?? 0 }
                wall.0 += u
                updating += u
                updates += 1
                sinceUpdate = 0
            }
            await wall.1 += try BenchRun.seconds { _ = try await without.append(batchB) }
        }
        let inAppends = updating
        let u = try await BenchRun.seconds { changed += try await with.updateUserIndex()?.changed ?? 0 }
        updating += u
        updates += 1
        let n = Double(events)
        let users = try await with.users(try UserPage(limit: 1_000)).users.map(\.user)
        let proof = try await BenchRun.latencies(2_000) { k in
            _ = try await with.userIndexAnswer(k % 2 == 0 && !users.isEmpty ? users[k % users.count] : "absent-\(k)")
        }
        // Closed here, so that the next phase's peak does not start with these stores' memory.
        await with.close()
        await without.close()
        return [("with_index_events_per_s", n / wall.0), ("without_index_events_per_s", n / wall.1),
                ("with_over_without", wall.1 / wall.0),
                // The stream hashes' share alone (the appends without the updates' time), and the updates'.
                ("stream_hashes_only_over_without", wall.1 / (wall.0 - inAppends)), ("index_updates", Double(updates)),
                ("index_update_seconds", updating), ("index_update_users_per_s", Double(changed) / max(updating, 1e-9)),
                ("stored_proof_p50_us", proof.p50), ("stored_proof_p99_us", proof.p99)]
    }
}
