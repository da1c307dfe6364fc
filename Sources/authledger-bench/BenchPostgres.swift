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
            let raw = try PostgresStorage(url: store("raw"))
            defer { try? raw.dropSchema() }
            try raw.createRawTable()
            var payloads = BenchRun.Payloads(total: events)
            var seq: Int64 = 1, elapsed = 0.0
            while payloads.nextBatch() {
                let batch = (0..<payloads.ends.count).map { k in payloads.withPayload(k) { Array($0) } }
                let first = seq
                elapsed += try BenchRun.seconds { try raw.rawInsert(batch, firstSeq: first) }
                seq += Int64(batch.count)
            }
            out.append(("raw_postgres_insert", [("events_per_s", Double(events) / elapsed)]))
        }
        let storage = try PostgresStorage(url: store("ledger"))
        defer { try? storage.dropSchema() }
        let ledger = try Ledger(storage: storage)
        if wanted("append_bulk") {
            let b = try run.appendBulk(ledger)
            out.append(("append_bulk", [("events_per_s", b.wall), ("events_per_cpu_s", b.cpu)]))
        }
        if wanted("append_concurrent") {
            let before = ledger.writerStats
            let c = try await run.appendConcurrent(ledger, writers: writers)
            let after = ledger.writerStats
            let txns = Double(after.transactions - before.transactions)
            out.append(("append_concurrent", [("events_per_s", c.rate), ("p50_ms", c.p50), ("p99_ms", c.p99),
                                              ("mean_batch", Double(after.requests - before.requests) / txns),
                                              ("txn_ms", (after.busySeconds - before.busySeconds) * 1000 / txns)]))
        }
        if wanted("replay") {
            let r = try run.replay(ledger)
            out.append(("replay", [("events_per_s", r.wall), ("events_per_cpu_s", r.cpu)]))
        }
        if wanted("query_devices") {
            let q = try run.queryDevices(ledger)
            out.append(("query_devices", [("p50_us", q.p50), ("p99_us", q.p99)]))
        }
        if wanted("verify") {
            let seconds = try BenchRun.seconds { _ = try ledger.verify() }
            out.append(("verify", [("events_per_s", Double(try ledger.head().seq) / seconds)]))
        }
        return out
    }
}
