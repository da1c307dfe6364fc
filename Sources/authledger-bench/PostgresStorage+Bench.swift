import AuthLedgerCore
import AuthLedgerPostgres
import Foundation
import NIOCore
import PostgresNIO

/// What `authledger bench --store postgresql://…` needs besides the ledger: the raw
/// PostgreSQL ceiling (plain batched INSERTs of the same payloads into one table) and
/// the removal of its temporary schema.
extension PostgresStorage {
    /// Creates the ceiling's table `raw_events (seq, data)` in this store's schema.
    public func createRawTable() async throws {
        _ = try await integers("CREATE TABLE \(tables.schema).raw_events (seq bigint PRIMARY KEY, data bytea NOT NULL)")
    }

    /// Inserts `payloads` with seqs from `firstSeq` in one transaction, 1000 rows a statement.
    public func rawInsert(_ payloads: [[UInt8]], firstSeq: Int64) async throws {
        try await connections.withSession { s in
            do {
                try await s.execute("BEGIN", doing: "raw insert")
                var k = 0
                while k < payloads.count {
                    let n = min(1000, payloads.count - k)
                    var sql = "INSERT INTO \(tables.schema).raw_events (seq, data) VALUES "
                    var binds = PostgresBindings(capacity: 2 * n)
                    for j in 0..<n {
                        sql += j == 0 ? "($\(2 * j + 1), $\(2 * j + 2))" : ", ($\(2 * j + 1), $\(2 * j + 2))"
                        binds.append(firstSeq + Int64(k + j))
                        binds.append(ByteBuffer(bytes: payloads[k + j]))
                    }
                    try await s.execute(sql, binds, doing: "raw insert")
                    k += n
                }
                try await s.execute("COMMIT", doing: "raw insert")
            } catch let e as PostgresFailure {
                s.discard()
                throw e.ledgerError
            }
        }
    }

    /// Drops this store's schema with every table in it (the benchmark's temporary stores).
    public func dropSchema() async throws {
        _ = try await integers("DROP SCHEMA \(tables.schema) CASCADE")
    }
}

/// Statement counts from `pg_stat_statements` (statements per event: the round trips as a
/// figure). Needs `shared_preload_libraries=pg_stat_statements` (tools/postgres sets it when
/// the module is installed) and the right to create the extension; nil otherwise.
extension PostgresStorage {
    /// Creates the extension if it can and zeroes its counts; false when it is not available.
    public func resetStatementCounts() async -> Bool {
        do {
            _ = try await integers("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            _ = try await integers("SELECT 0::int8 FROM (SELECT pg_stat_statements_reset()) AS reset")
            return true
        } catch {
            return false
        }
    }

    /// Top-level statements run in this database since the last reset (BEGIN and COMMIT
    /// included, the counting statements themselves not).
    public func statementCount() async -> Int64? {
        try? await integers("""
            SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
            WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND query NOT LIKE '%pg_stat_statements%'
            """).first
    }

    /// The most called statements since the last reset: (calls, mean ms of execution in the
    /// server, first 60 characters of the text).
    public func topStatements(_ n: Int) async -> [(Int64, Double, String)] {
        let rows = try? await connections.withSession { s in
            try await s.execute("""
                SELECT calls::int8, mean_exec_time::float8, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) FROM pg_stat_statements
                WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT \(n)
                """, doing: "statement counts")
        }
        return (rows ?? []).compactMap { try? $0.decode((Int64, Double, String).self) }
    }
}

/// PostgreSQL's own ceiling for `append_concurrent`: `writers` connections, each inserting
/// one row per durable transaction (one autocommit INSERT, one round trip) and waiting for
/// it before the next — what 64 clients that each await a durable acknowledgement get from
/// the engine with nothing else to do (its group commit included).
extension PostgresStorage {
    public func rawConcurrentCommits(_ payloads: [[UInt8]], writers: Int) async throws -> Double {
        _ = try await integers("CREATE TABLE \(tables.schema).raw_commits (seq bigserial PRIMARY KEY, data bytea NOT NULL)")
        // (Connections of their own, outside the ledger's pool of 16: one per writer. The
        // clock starts once every writer is connected, as the ledger's pool is open before
        // its phase: the ceiling counts the inserts, not 64 connection set-ups.)
        let sql = "INSERT INTO \(tables.schema).raw_commits (data) VALUES ($1)"
        let start = StartLine(writers)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                let mine = stride(from: w, to: payloads.count, by: writers).map { payloads[$0] }
                group.addTask { [connections] in
                    var arrived = false
                    do {
                        try await connections.withDedicated { c in
                            arrived = true
                            await start.ready()
                            for p in mine {
                                var b = PostgresBindings()
                                b.append(ByteBuffer(bytes: p))
                                _ = try await c.query(PostgresQuery(unsafeSQL: sql, binds: b), logger: connections.logger).get()
                            }
                        }
                    } catch {
                        // (A writer that could not connect still arrives: the others go on, and the phase fails.)
                        if !arrived { await start.ready() }
                        throw error
                    }
                }
            }
            do {
                try await group.waitForAll()
            } catch {
                throw LedgerError(.storageError, "raw concurrent commits failed")
            }
        }
        let t0 = await start.releasedAt
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        return Double(payloads.count) / seconds
    }
}

/// Holds `n` writers until the last one is ready, then lets them all go and notes when.
private actor StartLine {
    private let n: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private(set) var releasedAt: UInt64 = DispatchTime.now().uptimeNanoseconds

    init(_ n: Int) { self.n = n }

    func ready() async {
        guard waiting.count + 1 < n else {
            releasedAt = DispatchTime.now().uptimeNanoseconds
            for c in waiting { c.resume() }
            waiting = []
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }
}
