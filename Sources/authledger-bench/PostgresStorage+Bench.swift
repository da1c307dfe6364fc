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
    public func createRawTable() throws {
        _ = try integers("CREATE TABLE \(tables.schema).raw_events (seq bigint PRIMARY KEY, data bytea NOT NULL)")
    }

    /// Inserts `payloads` with seqs from `firstSeq` in one transaction, 1000 rows a statement.
    public func rawInsert(_ payloads: [[UInt8]], firstSeq: Int64) throws {
        let s = try connections.acquire()
        var reusable = false
        defer { connections.release(s, reusable: reusable) }
        do {
            try s.query("BEGIN", doing: "raw insert")
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
                try s.query(sql, binds, doing: "raw insert")
                k += n
            }
            try s.query("COMMIT", doing: "raw insert")
            reusable = true
        } catch let e as PostgresFailure {
            throw e.ledgerError
        }
    }

    /// Drops this store's schema with every table in it (the benchmark's temporary stores).
    public func dropSchema() throws {
        _ = try integers("DROP SCHEMA \(tables.schema) CASCADE")
    }
}
