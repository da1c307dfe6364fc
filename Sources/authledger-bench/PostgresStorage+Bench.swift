import AuthLedgerCore
import AuthLedgerPostgres
import Foundation
import NIOCore
import PostgresNIO
import Synchronization

/// What `authledger bench --store postgresql://…` needs besides the ledger: the raw
/// PostgreSQL ceiling (plain batched INSERTs of the same payloads into one table) and
/// the removal of its temporary schema.
extension PostgresStorage {
    /// Creates the ceiling's table `raw_events (seq, data)` in this store's schema.
    public func createRawTable() throws {
        _ = try integers("CREATE TABLE \(tables.schema).raw_events (seq bigint PRIMARY KEY, data bytea NOT NULL)")
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
    public func dropSchema() throws {
        _ = try integers("DROP SCHEMA \(tables.schema) CASCADE")
    }
}

/// Statement counts from `pg_stat_statements` (statements per event: the round trips as a
/// figure). Needs `shared_preload_libraries=pg_stat_statements` (tools/postgres sets it when
/// the module is installed) and the right to create the extension; nil otherwise.
extension PostgresStorage {
    /// Creates the extension if it can and zeroes its counts; false when it is not available.
    public func resetStatementCounts() -> Bool {
        do {
            _ = try integers("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            _ = try integers("SELECT 0::int8 FROM (SELECT pg_stat_statements_reset()) AS reset")
            return true
        } catch {
            return false
        }
    }

    /// Top-level statements run in this database since the last reset (BEGIN and COMMIT
    /// included, the counting statements themselves not).
    public func statementCount() -> Int64? {
        try? integers("""
            SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
            WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND query NOT LIKE '%pg_stat_statements%'
            """).first
    }

    /// The most called statements since the last reset: (calls, mean ms of execution in the
    /// server, first 60 characters of the text).
    public func topStatements(_ n: Int) -> [(Int64, Double, String)] {
        let s = try? connections.acquire()
        guard let s else { return [] }
        defer { connections.release(s, reusable: true) }
        guard let rows = try? s.query("""
            SELECT calls::int8, mean_exec_time::float8, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) FROM pg_stat_statements
            WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT \(n)
            """, doing: "statement counts") else { return [] }
        return rows.compactMap { try? $0.decode((Int64, Double, String).self) }
    }
}

/// PostgreSQL's own ceiling for `append_concurrent`: `writers` connections, each inserting
/// one row per durable transaction (one autocommit INSERT, one round trip) and waiting for
/// it before the next — what 64 clients that each await a durable acknowledgement get from
/// the engine with nothing else to do (its group commit included).
extension PostgresStorage {
    public func rawConcurrentCommits(_ payloads: [[UInt8]], writers: Int) async throws -> Double {
        _ = try integers("CREATE TABLE \(tables.schema).raw_commits (seq bigserial PRIMARY KEY, data bytea NOT NULL)")
        let sessions = try (0..<writers).map { _ in try connections.acquire() }
        defer { for s in sessions { connections.release(s, reusable: true) } }
        let failures = Mutex(0)
        let done = DispatchGroup()
        let t0 = DispatchTime.now().uptimeNanoseconds
        for (w, s) in sessions.enumerated() {
            let mine = stride(from: w, to: payloads.count, by: writers).map { payloads[$0] }
            let sql = "INSERT INTO \(tables.schema).raw_commits (data) VALUES ($1)"
            done.enter()
            Thread.detachNewThread {
                for p in mine {
                    var b = PostgresBindings()
                    b.append(ByteBuffer(bytes: p))
                    if (try? s.query(sql, b, doing: "raw commit")) == nil { failures.withLock { $0 += 1 } }
                }
                done.leave()
            }
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in done.notify(queue: .global()) { c.resume() } }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
        guard failures.withLock({ $0 }) == 0 else { throw LedgerError(.storageError, "raw concurrent commits failed") }
        return Double(payloads.count) / seconds
    }
}
