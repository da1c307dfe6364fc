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
