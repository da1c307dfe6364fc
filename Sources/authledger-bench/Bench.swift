import ArgumentParser
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import CLMDB
import CSQLite
import Foundation
import LMDB

/// `authledger bench`: the ledger against raw LMDB and SQLite, in one run on a temp store.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure appends, replay and queries against raw LMDB and SQLite ceilings (temp store).")

    @Option(name: .long, help: "Events for the bulk phases (the concurrent phase appends a tenth as many more).")
    var events = 1_000_000

    @Flag(name: .long, help: "Print JSON: {\"results\": {…}}.")
    var json = false

    @Option(name: .long, help: "Directory for the temporary stores (default $TMPDIR or /tmp).")
    var dir: String?

    @Option(name: .long, help: "Concurrent writers for append_concurrent.")
    var writers = 64

    @Option(name: .long, help: "Events of the user erased in the erase_user phase.")
    var eraseUserEvents = 10_000

    @Option(name: .long, help: "Past challenges of the long-history user in append_long_history.")
    var historyChallenges = 30_000

    @Option(name: .long, help: ArgumentHelp("Run only these phases (comma-separated; for profiling).", visibility: .hidden))
    var only: String?

    @Option(name: .long, help: "Users of the users_page phase's store (one event each).")
    var users = 1_000_000

    @Option(name: .long, help: "A postgresql:// URL: run the ledger's phases on PostgreSQL (temporary schemas) beside a raw PostgreSQL ceiling.")
    var store: String?

    func run() async throws {
        guard events >= 10_000 else { throw ValidationError("--events must be at least 10000") }
        guard historyChallenges >= 1, historyChallenges <= 10_000_000 else { throw ValidationError("--history-challenges must be 1...10000000") }
        let base = (dir ?? ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/authledger-bench-\(getpid())"
        try? FileManager.default.removeItem(atPath: base)
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }

        var results: [(String, [(String, Double)])] = []
        // Each phase's own peak (VmHWM is reset after each report), and the run's: the largest.
        var phasePeaks: [(String, Double)] = []
        BenchRun.resetPeak()
        func report(_ name: String, _ values: [(String, Double)]) {
            results.append((name, values))
            let m = BenchRun.memory()
            phasePeaks.append((name, m.peak))
            BenchRun.resetPeak()
            if !json {
                let text = values.map { "\($0.0)=\(BenchRun.fmt($0.1))" }.joined(separator: " ")
                FileHandle.standardError.write(Data("bench: \(name) \(text) [rss anon \(Int(m.anon)) MB, file \(Int(m.file)) MB, phase peak \(Int(m.peak)) MB]\n".utf8))
            }
        }
        let run = BenchRun(events: events, base: base)
        let phases = only.map { Set($0.split(separator: ",").map(String.init)) }
        func wanted(_ p: String) -> Bool { phases?.contains(p) ?? true }

        if let store, PostgresLocation.isPostgres(store) {
            let pg = BenchPostgres(url: store, events: events, writers: writers, run: run)
            for (name, values) in try await pg.results(wanted: wanted) { report(name, values) }
        } else {
        if wanted("raw_lmdb_put") || wanted("raw_lmdb_scan") { report("raw_lmdb_put", [("events_per_s", try run.rawLMDBPut())]) }
        if wanted("raw_lmdb_scan") { report("raw_lmdb_scan", [("events_per_s", try run.rawLMDBScan())]) }
        if wanted("raw_lmdb_commit") {
            let c = try run.rawLMDBCommit()
            report("raw_lmdb_commit", [("commits_per_s", c.rate), ("p50_ms", c.p50), ("p99_ms", c.p99)])
        }
        // Durable commits of 50 events dirtying 1, 2 or 3 random pages each: the disk's
        // ceiling for append_concurrent's group commits (the ledger's layout is 2).
        if wanted("raw_lmdb_group_commit") {
            var values: [(String, Double)] = []
            for k in 1...3 {
                let c = try run.rawLMDBGroupCommit(randomPuts: k)
                values += [("events_per_s_\(k)_random", c.eventsPerSecond), ("commit_ms_\(k)_random", c.commitMilliseconds),
                           ("kb_written_per_commit_\(k)_random", c.kbWrittenPerCommit)]
            }
            report("raw_lmdb_group_commit", values)
        }
        if wanted("raw_sqlite_put") { report("raw_sqlite_put", [("events_per_s", try run.rawSQLitePut())]) }
        // The ledger's own work per event by a plain loop (no rules): the floor append_bulk and replay are held against.
        if wanted("raw_ledger_equiv") {
            let r = try BenchLedgerEquiv(events: events, dir: base + "/ledger-equiv").run()
            report("raw_ledger_equiv", [("append_events_per_s", r.append), ("replay_events_per_s", r.replay)])
        }
        // The environment's settings (AUTHLEDGER_REPLAY_PARTITIONS=1: a sequential replay).
        let ledger = try await Ledger(lmdb: base + "/ledger", configuration: .fromEnvironment(ProcessInfo.processInfo.environment))
        if wanted("append_bulk") {
            let written = BenchRun.bytesWritten()
            let b = try await run.appendBulk(ledger)
            report("append_bulk", [("events_per_s", b.wall), ("events_per_cpu_s", b.cpu),
                                   ("bytes_written_per_event", (BenchRun.bytesWritten() - written) / Double(run.events))])
        }
        if wanted("append_bulk_clear") {
            let b = try await run.appendBulkClear()
            report("append_bulk_clear", [("events_per_s", b.wall), ("events_per_cpu_s", b.cpu)])
        }
        // 64 writers (by default) at once: the same phase plain and with the pipelined
        // durable commit (one fsync per group commit, answers held until the next
        // commit's sync), new users each, for a same-run comparison.
        func concurrentPhase(_ name: String, pipelined: Bool, prefix: String) async throws {
            let was = ledger.pipelinesCommits
            ledger.pipelinesCommits = pipelined
            defer { ledger.pipelinesCommits = was }
            let before = ledger.writerStats, written = BenchRun.bytesWritten()
            let c = try await run.appendConcurrent(ledger, writers: writers, prefix: prefix)
            let after = ledger.writerStats
            let txns = Double(after.transactions - before.transactions)
            let kbPerCommit = (BenchRun.bytesWritten() - written) / 1024 / txns
            report(name, [("events_per_s", c.rate), ("p50_ms", c.p50), ("p99_ms", c.p99),
                          ("mean_batch", Double(after.requests - before.requests) / txns),
                          ("txn_ms", (after.busySeconds - before.busySeconds) * 1000 / txns),
                          ("commit_ms", (after.commitSeconds - before.commitSeconds) * 1000 / txns),
                          ("kb_written_per_commit", kbPerCommit),
                          ("idle_syncs", Double(after.idleSyncs - before.idleSyncs)), ("pipelined", pipelined ? 1 : 0)])
        }
        if wanted("append_concurrent") {
            try await concurrentPhase("append_concurrent", pipelined: ledger.pipelinesCommits, prefix: "live")
        }
        if wanted("append_concurrent_no_linger") {
            // The same writers without the group-commit fill (Writer.fill): its same-run baseline.
            let linger = ledger.groupCommitLinger
            ledger.groupCommitLinger = 0
            defer { ledger.groupCommitLinger = linger }
            try await concurrentPhase("append_concurrent_no_linger", pipelined: ledger.pipelinesCommits, prefix: "eager")
        }
        if wanted("append_concurrent_pipelined") {
            try await concurrentPhase("append_concurrent_pipelined", pipelined: true, prefix: "piped")
        }
        if wanted("replay") {
            let r = try await run.replay(ledger)
            report("replay", [("events_per_s", r.wall), ("events_per_cpu_s", r.cpu)])
            // VmHWM counts the clean, file-backed pages of the LMDB maps too: show the split.
            let m = BenchRun.memory()
            report("rss_after_replay", [("anon_mb", m.anon), ("file_mb", m.file)])
        }
        if wanted("query_devices") {
            let q = try await run.queryDevices(ledger)
            report("query_devices", [("p50_us", q.p50), ("p99_us", q.p99)])
        }
        if wanted("erase_user") {
            let e = try await run.eraseUser(ledger, userEvents: eraseUserEvents)
            report("erase_user", [("user_events", Double(e.erased)), ("seconds", e.seconds), ("store_mb", e.storeMB)])
        }
        if wanted("proof_inclusion") {
            let p = try await run.inclusionProofs(ledger)
            report("proof_inclusion", [("p50_us", p.p50), ("p99_us", p.p99)])
        }
        if wanted("proof_consistency") {
            let p = try await run.consistencyProofs(ledger)
            report("proof_consistency", [("p50_us", p.p50), ("p99_us", p.p99)])
        }
        if wanted("checkpoint") {
            let p = try await run.checkpoints(ledger)
            report("checkpoint", [("p50_us", p.p50), ("p99_us", p.p99)])
        }
        if wanted("tile_read") {
            let t = try await run.tileReads(ledger)
            report("tile_read", [("hash_tiles_per_s", t.hashTiles), ("entry_bundles_per_s", t.entryBundles)])
        }
        if wanted("tile_serving") {
            let t = try await run.tileServing(ledger)
            report("tile_serving", [("tiles_per_s", t.rate), ("p50_ms", t.p50), ("p99_ms", t.p99)])
        }
        if wanted("append_tree_overhead") {
            // Two new ledgers of its own: the main store's map pages that the proof and tile
            // phases read (clean page cache, ~200 MB) are let go first, so the phase's peak is its own.
            (ledger.storage as? LMDBStorage)?.environment.releaseMappedPages()
            let o = try await run.treeOverhead()
            report("append_tree_overhead", [("with_tree_events_per_s", o.with), ("without_tree_events_per_s", o.without),
                                            ("with_tree_events_per_cpu_s", o.withCPU), ("without_tree_events_per_cpu_s", o.withoutCPU),
                                            ("overhead_pct", (o.without / o.with - 1) * 100),
                                            ("overhead_cpu_pct", (o.withoutCPU / o.withCPU - 1) * 100)])
        }
        if wanted("proof_verify") {
            let v = try run.proofVerify()
            report("proof_verify", [("es256_per_s", v.es256), ("eddsa_per_s", v.edDSA)])
        }
        if wanted("approve_http") {
            let modes = try await run.approveOverHTTP(ledger)
            report("approve_http", modes.flatMap { [("\($0.0)_per_s", $0.1), ("\($0.0)_p50_ms", $0.2)] })
        }
        if wanted("link_redeem") {
            let few = try await run.linkRedeem(ledger, pending: 1_000), many = try await run.linkRedeem(ledger, pending: 100_000)
            report("link_redeem", [("p50_ms_1k_pending", few), ("p50_ms_100k_pending", many)])
        }
        if wanted("witness_add_checkpoint") { report("witness_add_checkpoint", try await run.witnessAddCheckpoint(ledger, requests: 5_000)) }
        if wanted("append_witnessed") { report("append_witnessed", try await run.appendWitnessed(writers: writers)) }
        if wanted("user_index") { report("user_index", BenchUserIndex.run()) }
        if wanted("user_index_append") { report("user_index_append", try await run.userIndexOverhead()) }
        if wanted("users_page") {
            report("users_page", try await BenchUsers(users: users, dir: try run.makeDir("users")).run())
        }
        // Watches of projections: held, memory, commit-to-watcher latency, the challenge wait, idle cost.
        if wanted("watch") { report("watch", try await BenchWatch(dir: base + "/watch").run()) }
        // Watches over HTTP: 10,000 on 2,000 connections, memory beyond a connection, latency.
        if wanted("watch_http") { report("watch_http", try await BenchWatchHTTP(dir: base + "/watch-http").run()) }
        if wanted("append_long_history") {
            let h = try await BenchLongHistory(base: base, pastChallenges: historyChallenges, appends: 200).run()
            report("append_long_history", h.values)
        }
        }
        let last = BenchRun.memory().peak
        report("peak_rss_mb", [("value", max(last, phasePeaks.map(\.1).max() ?? 0))])

        func value(_ n: String, _ k: String) -> Double { results.first { $0.0 == n }?.1.first { $0.0 == k }?.1 ?? 0 }
        let rawPut = value("raw_lmdb_put", "events_per_s"), rawScan = value("raw_lmdb_scan", "events_per_s")
        // A phase left out by --only has no ratio (0/0 is not JSON).
        let ratios: [(String, Double)] = ([
            ("append_bulk_vs_raw_lmdb_put", value("append_bulk", "events_per_s") / rawPut),
            // On PostgreSQL (--store postgresql://…): the ledger against its own engine's ceiling.
            ("append_bulk_vs_raw_postgres_insert", value("append_bulk", "events_per_s") / value("raw_postgres_insert", "events_per_s")),
            ("append_concurrent_vs_raw_postgres_insert", value("append_concurrent", "events_per_s") / value("raw_postgres_insert", "events_per_s")),
            // Against the engine's own 64 clients each awaiting a durable single-row commit.
            ("append_concurrent_vs_raw_postgres_concurrent_commit", value("append_concurrent", "events_per_s") / value("raw_postgres_concurrent_commit", "events_per_s")),
            // Two servers on one database (one head lock), against one with as many writers (target ≥ 1).
            ("append_two_servers_vs_append_concurrent", value("append_two_servers", "events_per_s") / value("append_concurrent", "events_per_s")),
            ("append_bulk_vs_raw_sqlite_put", value("append_bulk", "events_per_s") / value("raw_sqlite_put", "events_per_s")),
            ("append_concurrent_vs_raw_lmdb_put", value("append_concurrent", "events_per_s") / rawPut),
            // Group commit's ceiling: every writer's event in each single-event-latency commit.
            ("append_concurrent_vs_writers_x_raw_lmdb_commit", value("append_concurrent", "events_per_s") / (Double(writers) * value("raw_lmdb_commit", "commits_per_s"))),
            ("replay_vs_raw_lmdb_scan", value("replay", "events_per_s") / rawScan),
            // The same work per event as the ledger, in a plain loop without rules (targets: ≥ 0.7).
            ("append_bulk_vs_raw_ledger_equiv", value("append_bulk", "events_per_s") / value("raw_ledger_equiv", "append_events_per_s")),
            ("replay_vs_raw_ledger_equiv", value("replay", "events_per_s") / value("raw_ledger_equiv", "replay_events_per_s")),
            // Pipelined durable commit (one fsync per commit) against a sync of data and meta per commit.
            ("append_concurrent_pipelined_vs_default", value("append_concurrent_pipelined", "events_per_s") / value("append_concurrent", "events_per_s")),
            // The group-commit fill (waiting up to 200 µs for the last batch's callers) against taking the queue at once.
            ("append_concurrent_vs_no_linger", value("append_concurrent", "events_per_s") / value("append_concurrent_no_linger", "events_per_s")),
            // The disk's ceiling for group commits dirtying two random pages per event, as the ledger's do.
            ("append_concurrent_vs_raw_lmdb_group_commit", value("append_concurrent", "events_per_s") / value("raw_lmdb_group_commit", "events_per_s_2_random")),
            // The issue's bound: the slower of the CPU (bulk appends) and the disk (writers × single commits).
            ("append_concurrent_vs_bound", value("append_concurrent", "events_per_s") / min(value("append_bulk", "events_per_s"), Double(writers) * value("raw_lmdb_commit", "commits_per_s"))),
            // Salted commitments of personal values against hashing them in clear (SPEC 1.5).
            ("append_bulk_commitments_vs_clear", value("append_bulk", "events_per_s") / value("append_bulk_clear", "events_per_s")),
            // Target ≤ 1.2: an append costs the same whatever the user's past.
            ("append_long_history_vs_fresh_user", value("append_long_history", "p50_ratio")),
            // Device proofs, target ≤ 1.5: a signed approval's cost (time per approval) against an unsigned one's.
            ("approve_es256_vs_unsigned_cost", value("approve_http", "unsigned_per_s") / value("approve_http", "es256_per_s")),
            ("approve_eddsa_vs_unsigned_cost", value("approve_http", "unsigned_per_s") / value("approve_http", "eddsa_per_s")),
            // O(1) in pending links: ≈ 1.
            ("link_redeem_100k_vs_1k_pending", value("link_redeem", "p50_ms_100k_pending") / value("link_redeem", "p50_ms_1k_pending")),
        ] as [(String, Double)]).filter { $0.1.isFinite && $0.1 > 0 }

        if json {
            func obj(_ values: [(String, Double)]) -> JSON { .object(values.map { ($0.0, BenchRun.number($0.1)) }) }
            var r: [(String, JSON)] = results.map { ($0.0, obj($0.1)) }
            r = r.map { $0.0 == "peak_rss_mb" ? ($0.0, BenchRun.number(value("peak_rss_mb", "value"))) : $0 }
            let out = JSON.object([
                ("events", .int(Int64(events))),
                ("concurrent_events", .int(Int64(run.concurrentEvents))),
                ("writers", .int(Int64(writers))),
                ("results", .object(r)),
                ("ratios", obj(ratios)),
                // Where the peak is: VmHWM of each phase alone (from the end of the previous report).
                ("phase_peak_rss_mb", obj(phasePeaks.filter { $0.0 != "rss_after_replay" && $0.0 != "peak_rss_mb" })),
            ])
            print(out.serialized())
        } else {
            print("authledger bench: \(events) events (\(run.concurrentEvents) more in the concurrent phase, \(writers) writers)")
            print("")
            print("| benchmark | result |")
            print("|---|---|")
            for (name, values) in results {
                print("| \(name) | " + values.map { $0.0 == "value" ? BenchRun.fmt($0.1) : "\($0.0) \(BenchRun.fmt($0.1))" }.joined(separator: ", ") + " |")
            }
            print("")
            for (name, v) in ratios { print("\(name): \(String(format: "%.3f", v))") }
        }
    }
}

/// The phases of one benchmark run.
struct BenchRun {
    let events: Int
    let base: String
    static let batch = 10_000
    static let start = Timestamp(rfc3339: "2026-01-05T08:00:00Z")!

    var concurrentEvents: Int { max(events / 10, 10_000) }

    static func fmt(_ v: Double) -> String {
        v >= 1000 ? String(Int(v.rounded())) : String(format: "%.2f", v)
    }

    static func number(_ v: Double) -> JSON {
        // A ratio over a phase left out with --only is not a number.
        guard v.isFinite else { return .null }
        // Small figures (statements per event) keep four decimals.
        return v >= 1000 ? .int(Int64(v.rounded())) : .number(String(format: v < 0.1 ? "%.4f" : "%.2f", v))
    }

    static func seconds(_ f: () throws -> Void) rethrows -> Double {
        let t0 = DispatchTime.now().uptimeNanoseconds
        try f()
        return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
    }

    static func seconds(_ f: () async throws -> Void) async rethrows -> Double {
        let t0 = DispatchTime.now().uptimeNanoseconds
        try await f()
        return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    /// Events per second of wall time, and per second of this process's CPU time
    /// (steadier than wall time when other work shares the cores).
    func appendBulk(_ ledger: Ledger) async throws -> (wall: Double, cpu: Double) {
        var workload = BenchWorkload(total: events, start: BenchRun.start)
        var elapsed = 0.0, cpu = 0.0
        while true {
            let batch = workload.batch(BenchRun.batch)
            if batch.isEmpty { break }
            let c0 = BenchRun.cpuSeconds()
            await elapsed += try BenchRun.seconds { _ = try await ledger.append(batch) }
            cpu += BenchRun.cpuSeconds() - c0
        }
        return (Double(events) / elapsed, Double(events) / cpu)
    }

    /// `writers` tasks, each appending single events of its own users through the
    /// group-commit writer and awaiting each durable acknowledgement.
    func appendConcurrent(_ ledger: Ledger, writers: Int, prefix: String = "live") async throws -> (rate: Double, p50: Double, p99: Double) {
        let total = concurrentEvents
        let t0 = DispatchTime.now().uptimeNanoseconds
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for w in 0..<writers {
                let share = total / writers + (w < total % writers ? 1 : 0)
                group.addTask {
                    var workload = BenchWorkload(total: share, group: 4, prefix: "\(prefix)\(w)", start: BenchRun.start)
                    var lat: [Double] = []
                    lat.reserveCapacity(share)
                    while let e = workload.next() {
                        let s = DispatchTime.now().uptimeNanoseconds
                        _ = try await ledger.append(AppendRequest([EventInput(event: e)]))
                        lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e6)
                    }
                    return lat
                }
            }
            var all: [Double] = []
            for try await l in group { all += l }
            return all.sorted()
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        return (Double(latencies.count) / elapsed, BenchRun.percentile(latencies, 0.5), BenchRun.percentile(latencies, 0.99))
    }

    func replay(_ ledger: Ledger) async throws -> (wall: Double, cpu: Double) {
        var n: UInt64 = 0
        let c0 = BenchRun.cpuSeconds()
        let elapsed = try await BenchRun.seconds { n = try await ledger.replay() }
        return (Double(n) / elapsed, Double(n) / (BenchRun.cpuSeconds() - c0))
    }

    func queryDevices(_ ledger: Ledger) async throws -> (p50: Double, p99: Double) {
        let users = BenchWorkload(total: events, start: BenchRun.start).userCount
        let options = QueryOptions(asOf: Timestamp(rfc3339: "2026-06-01T00:00:00Z")!)
        var rng = SplitMix64(seed: 42)
        for k in 0..<1000 { _ = try await ledger.devices(of: "user-\(k % users)", options).json }  // warm up
        var lat: [Double] = []
        let count = 100_000  // enough that p99 is the 1,000th worst, not a few stalls
        lat.reserveCapacity(count)
        for _ in 0..<count {
            let user = "user-\(Int(rng.next() % UInt64(users)))"
            let s = DispatchTime.now().uptimeNanoseconds
            let answer = try await ledger.devices(of: user, options).json
            lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e3)
            precondition(answer != .null)
        }
        lat.sort()
        return (BenchRun.percentile(lat, 0.5), BenchRun.percentile(lat, 0.99))
    }

    func makeDir(_ name: String) throws -> String {
        let p = base + "/" + name
        try FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: true)
        return p
    }
}
