import AuthLedger
import AuthLedgerLMDB
import AuthLedgerServer
import AuthLedgerWitness
import Foundation
import Logging
import ServiceLifecycle

/// The witness phases of `authledger bench`.
extension BenchRun {
    /// `witness_add_checkpoint`: `authledger witness`'s request handling (parse, log
    /// signature, consistency proof, durable update, cosignature) for one origin whose
    /// size grows by 1–64 events each request, with real proofs from `ledger`'s tree,
    /// one request after the other (each waits for its commit); then the same with 16
    /// origins at once, whose requests share group commits.
    func witnessAddCheckpoint(_ ledger: Ledger, requests: Int) async throws -> [(String, Double)] {
        let head = try await ledger.head().seq
        func chain(_ origin: String, count: Int) async throws -> [[UInt8]] {
            let signer = try CheckpointSigner(origin: origin, seed: Array(BenchSeed.of(origin)))
            var rng = SplitMix64(seed: 11)
            var size: UInt64 = 0
            var out: [[UInt8]] = []
            while out.count < count, size < head {
                let next = min(head, size + 1 + rng.next() % 64)
                let (_, root) = try await ledger.treeHead(size: next)
                let proof = size == 0 ? [] : try await ledger.consistencyProof(from: size, to: next).proof
                let body = "old \(size)\n" + proof.map { Data($0.bytes).base64EncodedString() + "\n" }.joined() + "\n" + (try signer.sign(size: next, root: root))
                out.append(Array(body.utf8))
                size = next
            }
            return out
        }
        func witness(_ dir: String, origins: [String]) throws -> Witness {
            let keys = try origins.map { try NoteVerifierKey(parsing: try CheckpointSigner(origin: $0, seed: Array(BenchSeed.of($0))).verifierKey) }
            return Witness(cosigner: try Cosigner(name: "bench.witness", seed: [UInt8](repeating: 9, count: 32)), logs: keys,
                           store: try WitnessStore(path: dir))
        }
        // One origin, sequential.
        let one = try await chain("bench.example/one", count: requests)
        let w1 = try witness(base + "/witness-one", origins: ["bench.example/one"])
        var lat: [Double] = []
        let c0 = BenchRun.cpuSeconds(), t0 = DispatchTime.now().uptimeNanoseconds
        for body in one {
            let s = DispatchTime.now().uptimeNanoseconds
            let a = await w1.addCheckpoint(body)
            guard a.status == 200 else { throw LedgerError(.storageError, "witness bench: \(a.status) \(a.body)") }
            lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e6)
        }
        let wall = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9, cpu = BenchRun.cpuSeconds() - c0
        lat.sort()
        // 16 origins at once, each a chain of its own.
        let origins = (0..<16).map { "bench.example/o\($0)" }
        var chains: [[[UInt8]]] = []
        for origin in origins { chains.append(try await chain(origin, count: max(requests / 16, 1))) }
        let w16 = try witness(base + "/witness-many", origins: origins)
        let t1 = DispatchTime.now().uptimeNanoseconds
        let ok = try await withThrowingTaskGroup(of: Int.self) { g in
            for c in chains {
                g.addTask {
                    for body in c {
                        let a = await w16.addCheckpoint(body)
                        guard a.status == 200 else { throw LedgerError(.storageError, "witness bench: \(a.status) \(a.body)") }
                    }
                    return c.count
                }
            }
            return try await g.reduce(0, +)
        }
        let wallMany = Double(DispatchTime.now().uptimeNanoseconds - t1) / 1e9
        return [("one_origin_per_s", Double(one.count) / wall), ("one_origin_p50_ms", BenchRun.percentile(lat, 0.5)),
                ("one_origin_p99_ms", BenchRun.percentile(lat, 0.99)), ("one_origin_per_cpu_s", Double(one.count) / cpu),
                ("16_origins_per_s", Double(ok) / wallMany)]
    }

    /// `append_witnessed`: concurrent appends (the `append_concurrent` workload) into a
    /// fresh store without witnessing, then into another served by `serve` collecting
    /// cosignatures every second from three local witnesses (in-process, real HTTP).
    func appendWitnessed(writers: Int) async throws -> [(String, Double)] {
        var logger = Logger(label: "bench.witness")
        logger.logLevel = .error
        let plain = try await Ledger(lmdb: base + "/witnessed-plain")
        let without = try await appendConcurrent(plain, writers: writers, prefix: "plain")
        let ledger = try await Ledger(lmdb: base + "/witnessed")
        let origin = "bench.example/witnessed"
        let logKey = try NoteVerifierKey(parsing: try ledger.checkpointSigner(origin: origin).verifierKey)
        var groups: [ServiceGroup] = []
        var policy = ""
        for k in 0..<3 {
            let w = Witness(cosigner: try Cosigner(name: "w\(k).bench", seed: [UInt8](repeating: UInt8(20 + k), count: 32)), logs: [logKey],
                            store: try WitnessStore(path: base + "/witness-\(k)"), logger: logger)
            let (port, g) = try await WitnessServer(witness: w).startInBackground(logger: logger)
            groups.append(g)
            policy += "witness w\(k) \(w.cosigner.verifierKey) http://127.0.0.1:\(port)\n"
        }
        policy += "group all3 all w0 w1 w2\nquorum all3\n"
        var witnessing = try WitnessingConfiguration(policy: try WitnessPolicy(parsing: policy))
        witnessing.interval = .seconds(1)
        let server = try await BenchServer.start(ledger, tokens: "bench-token:admin") { [witnessing] config in
            config.checkpointOrigin = origin
            // Only the collector beside the appends (the sweeper is off already): no reader checks either.
            config.readerCheckInterval = nil
            config.witnessing = witnessing
        }
        let with = try await appendConcurrent(ledger, writers: writers, prefix: "witnessed")
        // The last checkpoint of the run is cosigned within a few rounds.
        var cosigned: UInt64 = 0
        let head = try await ledger.head().seq
        for _ in 0..<150 where cosigned < head {
            try await Task.sleep(for: .milliseconds(100))
            let note = try await ledger.metaRecord("witness/quorum").flatMap { try? SignedNote(parsing: $0) }
            cosigned = note.flatMap { try? Checkpoint(text: $0.text).size } ?? 0
        }
        await server.stop()
        for g in groups { await g.triggerGracefulShutdown() }
        return [("without_events_per_s", without.rate), ("with_3_witnesses_events_per_s", with.rate),
                ("without_p99_ms", without.p99), ("with_p99_ms", with.p99),
                ("head", Double(head)), ("cosigned_size", Double(cosigned))]
    }
}

/// A fixed 32-byte seed per name (benchmark keys only).
enum BenchSeed {
    static func of(_ name: String) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        for (k, b) in name.utf8.enumerated() { out[k % 32] &+= b &* UInt8(truncatingIfNeeded: k + 1) }
        return out
    }
}
