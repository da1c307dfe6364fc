import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import AuthLedgerServer
import Foundation
import Logging

/// `tile_serving` of `authledger bench`: full hash tiles from `authledger serve`'s routes
/// over loopback, with an audit token, on keep-alive connections.
extension BenchRun {
    func tileServing(_ ledger: Ledger, connections: Int = 4, requestsPerConnection: Int = 5_000) async throws -> (rate: Double, p50: Double, p99: Double) {
        let head = try await ledger.head().seq
        guard head >= 256 else { return (0, 0, 0) }
        let server = try await BenchServer.start(ledger, tokens: "bench-audit-token:audit")
        defer { server.cancel() }
        let port = server.port

        let tiles = head / 256
        let paths: [[String]] = (0..<connections).map { c in
            var rng = SplitMix64(seed: UInt64(100 + c))
            return (0..<requestsPerConnection).map { _ in "/tile/0/" + BenchRun.tileIndexPath(rng.next() % tiles) }
        }
        let t0 = DispatchTime.now().uptimeNanoseconds
        let latencies: [[Double]] = try await withThrowingTaskGroup(of: [Double].self) { g in
            for c in 0..<connections {
                let p = paths[c]
                g.addTask { try await BenchRun.onThread { try LoopbackClient(port: port).get(p, token: "bench-audit-token", expect: 256 * 32) } }
            }
            var all: [[Double]] = []
            for try await l in g { all.append(l) }
            return all
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        await server.stop()
        let all = latencies.flatMap { $0 }.sorted()
        return (Double(all.count) / elapsed, BenchRun.percentile(all, 0.5), BenchRun.percentile(all, 0.99))
    }

    /// `N` as a C2SP tile path: 3-digit elements, `x` before all but the last.
    static func tileIndexPath(_ n: UInt64) -> String {
        var n = n
        var s = String(format: "%03d", Int(n % 1000))
        while n >= 1000 {
            n /= 1000
            s = String(format: "x%03d/", Int(n % 1000)) + s
        }
        return s
    }

    /// Runs blocking work on its own thread (not the cooperative pool the server shares).
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            Thread { c.resume(with: Result { try body() }) }.start()
        }
    }
}
