import Synchronization
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import Foundation

/// The verifiable log's phases of `authledger bench`.
extension BenchRun {
    /// Appends the same workload into two fresh stores, one with the Merkle tree
    /// maintained and one without, batch by batch in turn (so both see the same
    /// machine load): events per second of each, and the tree's overhead.
    func treeOverhead() async throws -> (with: Double, without: Double, withCPU: Double, withoutCPU: Double) {
        let withTree = try await Ledger(lmdb: base + "/tree-with")
        let withoutTree = try await Ledger(lmdb: base + "/tree-without")
        var a = BenchWorkload(total: events, start: BenchRun.start)
        var b = BenchWorkload(total: events, start: BenchRun.start)
        var wall = (0.0, 0.0), cpu = (0.0, 0.0)
        withoutTree.appendSwitches.maintainMerkleTree.store(false, ordering: .relaxed)
        while true {
            let batchA = a.batch(BenchRun.batch), batchB = b.batch(BenchRun.batch)
            if batchA.isEmpty { break }
            var c0 = BenchRun.cpuSeconds()
            await wall.0 += try BenchRun.seconds { _ = try await withTree.append(batchA) }
            cpu.0 += BenchRun.cpuSeconds() - c0
            c0 = BenchRun.cpuSeconds()
            await wall.1 += try BenchRun.seconds { _ = try await withoutTree.append(batchB) }
            cpu.1 += BenchRun.cpuSeconds() - c0
        }
        let n = Double(events)
        return (n / wall.0, n / wall.1, n / cpu.0, n / cpu.1)
    }

    /// Latencies in µs of `count` calls of `body(k)`, after 1,000 to warm up.
    static func latencies(_ count: Int, _ body: (Int) async throws -> Void) async rethrows -> (p50: Double, p99: Double) {
        for k in 0..<1000 { try await body(k) }
        var lat: [Double] = []
        lat.reserveCapacity(count)
        for k in 0..<count {
            let s = DispatchTime.now().uptimeNanoseconds
            try await body(k)
            lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e3)
        }
        lat.sort()
        return (percentile(lat, 0.5), percentile(lat, 0.99))
    }

    /// Inclusion proofs of random events in the tree of the head.
    func inclusionProofs(_ ledger: Ledger) async throws -> (p50: Double, p99: Double) {
        let head = try await ledger.head().seq
        var rng = SplitMix64(seed: 7)
        return try await BenchRun.latencies(20_000) { _ in
            let p = try await ledger.inclusionProof(seq: 1 + rng.next() % head)
            precondition(!p.proof.isEmpty || head == 1)
        }
    }

    /// Consistency proofs from random sizes to the head.
    func consistencyProofs(_ ledger: Ledger) async throws -> (p50: Double, p99: Double) {
        let head = try await ledger.head().seq
        var rng = SplitMix64(seed: 8)
        return try await BenchRun.latencies(20_000) { _ in
            _ = try await ledger.consistencyProof(from: 1 + rng.next() % head, to: head)
        }
    }

    /// The signed checkpoint of the head: the root (O(log n) reads) and an Ed25519 signature.
    func checkpoints(_ ledger: Ledger) async throws -> (p50: Double, p99: Double) {
        let signer = try CheckpointSigner(origin: "bench.example/log", seed: [UInt8](repeating: 42, count: 32))
        return try await BenchRun.latencies(5_000) { _ in _ = try await ledger.checkpoint(signer: signer) }
    }

    /// Full hash tiles (level 0 and 1) and entry bundles read from the store, per second, in-process.
    func tileReads(_ ledger: Ledger) async throws -> (hashTiles: Double, entryBundles: Double) {
        let head = try await ledger.head().seq
        let level0 = max(1, head / 256), level1 = head >> 16
        var rng = SplitMix64(seed: 9)
        let n = 20_000
        let hashSeconds = try await BenchRun.seconds {
            for k in 0..<n {
                if k % 8 == 7 && level1 > 0 {
                    _ = try await ledger.hashTile(level: 1, index: rng.next() % level1, width: 256)
                } else {
                    _ = try await ledger.hashTile(level: 0, index: rng.next() % level0, width: head >= 256 ? 256 : Int(head))
                }
            }
        }
        let bundles = 500
        let entrySeconds = try await BenchRun.seconds {
            for _ in 0..<bundles { _ = try await ledger.entryBundle(index: rng.next() % level0, width: head >= 256 ? 256 : Int(head)) }
        }
        return (Double(n) / hashSeconds, Double(bundles) / entrySeconds)
    }
}
