import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import Foundation

/// `authledger bench --store postgresql://…`: the ledger's phases on PostgreSQL beside the
/// raw PostgreSQL ceiling (plain batched INSERTs of the same payloads into one table), in
/// one run, each in a temporary schema of the database that is dropped afterwards.
struct BenchPostgres {
    let url: String
    let events: Int
    let writers: Int
    let run: BenchRun

    /// The URL of a temporary schema `name` in the database of `url`.
    func store(_ name: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "schema=authledger_bench_\(getpid())_\(name)"
    }

    func results(wanted: (String) -> Bool) async throws -> [(String, [(String, Double)])] {
        guard !url.contains("schema=") else {
            throw LedgerError(.storageError, "bench --store postgresql://… makes its own schemas: leave schema= out of the URL")
        }
        var out: [(String, [(String, Double)])] = []
        if wanted("raw_postgres_insert") {
            let raw = try await PostgresStorage(url: store("raw"))
            let elapsed = try await Self.dropping(raw) {
                try await raw.createRawTable()
                var payloads = BenchRun.Payloads(total: events)
                var seq: Int64 = 1, elapsed = 0.0
                while payloads.nextBatch() {
                    let batch = (0..<payloads.ends.count).map { k in payloads.withPayload(k) { Array($0) } }
                    let first = seq
                    elapsed += try await BenchRun.seconds { try await raw.rawInsert(batch, firstSeq: first) }
                    seq += Int64(batch.count)
                }
                return elapsed
            }
            out.append(("raw_postgres_insert", [("events_per_s", Double(events) / elapsed)]))
        }
        if wanted("raw_postgres_concurrent_commit") {
            let raw = try await PostgresStorage(url: store("rawcommit"))
            var payloads = BenchRun.Payloads(total: run.concurrentEvents)
            var all: [[UInt8]] = []
            while payloads.nextBatch() { all += (0..<payloads.ends.count).map { k in payloads.withPayload(k) { Array($0) } } }
            let rate = try await Self.dropping(raw) { [all, writers] in try await raw.rawConcurrentCommits(all, writers: writers) }
            out.append(("raw_postgres_concurrent_commit", [("events_per_s", rate)]))
        }
        let storage = try await PostgresStorage(url: store("ledger"))
        return try await Self.dropping(storage) { try await ledgerResults(storage, wanted: wanted, out) }
    }

    /// Runs `body`, then drops `storage`'s schema (whether `body` threw or not).
    private static func dropping<T>(_ storage: PostgresStorage, _ body: () async throws -> T) async throws -> T {
        do {
            let result = try await body()
            try? await storage.dropSchema()
            return result
        } catch {
            try? await storage.dropSchema()
            throw error
        }
    }

    private func ledgerResults(_ storage: PostgresStorage, wanted: (String) -> Bool,
                               _ raw: [(String, [(String, Double)])]) async throws -> [(String, [(String, Double)])] {
        var out = raw
        let ledger = try await Ledger(storage: storage)
        // Statements per event (pg_stat_statements; null when it is not available).
        let counting = await storage.resetStatementCounts()
        func statements(_ phase: String, events n: Int, _ body: () async throws -> [(String, Double)]) async throws -> [(String, Double)] {
            if counting { _ = await storage.resetStatementCounts() }
            var values = try await body()
            let calls = counting ? await storage.statementCount() : nil
            values.append(("statements_per_event", calls.map { Double($0) / Double(n) } ?? .nan))
            if counting {
                let top = await storage.topStatements(8).map { "\($0.0)× \(String(format: "%.3f", $0.1)) ms \($0.2)" }.joined(separator: " | ")
                FileHandle.standardError.write(Data("bench: \(phase) statements: \(top)\n".utf8))
            }
            return values
        }
        if wanted("append_bulk") {
            out.append(("append_bulk", try await statements("append_bulk", events: events) {
                let b = try await run.appendBulk(ledger)
                return [("events_per_s", b.wall), ("events_per_cpu_s", b.cpu)]
            }))
        }
        if wanted("append_concurrent") {
            out.append(("append_concurrent", try await statements("append_concurrent", events: run.concurrentEvents) {
                let before = ledger.writerStats
                let c = try await run.appendConcurrent(ledger, writers: writers)
                let after = ledger.writerStats
                let txns = Double(after.transactions - before.transactions)
                return [("events_per_s", c.rate), ("p50_ms", c.p50), ("p99_ms", c.p99),
                        ("mean_batch", Double(after.requests - before.requests) / txns),
                        ("txn_ms", (after.busySeconds - before.busySeconds) * 1000 / txns)]
            }))
        }
        if wanted("append_two_servers") {
            // Two ledgers on one schema (two servers: two writer threads, two connection pools,
            // one head lock), `writers / 2` writers each, appending at once: the combined rate.
            let second = try await Ledger(storage: try await PostgresStorage(url: store("ledger")))
            out.append(("append_two_servers", try await statements("append_two_servers", events: 2 * run.concurrentEvents) {
                let t0 = DispatchTime.now().uptimeNanoseconds
                async let a = run.appendConcurrent(ledger, writers: max(1, writers / 2), prefix: "two-a")
                async let b = run.appendConcurrent(second, writers: max(1, writers / 2), prefix: "two-b")
                let (ra, rb) = try await (a, b)
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
                return [("events_per_s", Double(2 * run.concurrentEvents) / seconds),
                        ("p50_ms", max(ra.p50, rb.p50)), ("p99_ms", max(ra.p99, rb.p99))]
            }))
            await second.close()
        }
        if wanted("replay") {
            out.append(("replay", try await statements("replay", events: try await Int(ledger.head().seq)) {
                let r = try await run.replay(ledger)
                return [("events_per_s", r.wall), ("events_per_cpu_s", r.cpu)]
            }))
        }
        if wanted("query_devices") {
            let q = try await run.queryDevices(ledger)
            out.append(("query_devices", [("p50_us", q.p50), ("p99_us", q.p99)]))
        }
        if wanted("verify") {
            let seconds = try await BenchRun.seconds { _ = try await ledger.verify() }
            out.append(("verify", [("events_per_s", Double(try await ledger.head().seq) / seconds)]))
        }
        return out
    }
}
