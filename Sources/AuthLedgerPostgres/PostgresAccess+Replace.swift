import AuthLedgerCore
import NIOCore
import PostgresNIO

/// A replay's rewrite of the projections and records (`clearProjectionStates`,
/// `clearRecords`, then every state and record again): the new contents are kept here
/// and sent at the end as one statement per table that deletes the rows that are gone,
/// updates the rows whose bytes changed and inserts the new ones (one hash join of the table with the arrays) — so a replay of an
/// intact store writes almost nothing, instead of deleting every row and inserting it
/// again (each insert then also checks its key against the deleted row's index entry).
/// A replay reads no state or record in its write transaction; a scan sends the
/// replacement first (`sendAll`).
struct PostgresReplacement {
    /// nil: the table was not cleared in this transaction.
    var states: [String: [UInt8]]?
    var records: [PostgresPendingWrites.RecordKey: [UInt8]]?
}

extension PostgresAccess {
    /// The statements writing the replacement, which is then empty (after the writes: `sendAll`).
    func sendReplacement() throws {
        let (states, records) = (replacing.states, replacing.records)
        replacing = PostgresReplacement()
        if let states {
            try sendNow(PostgresStatement(Self.replaceSQL(t.states, keys: [("key", "bytea")]), doing: "rewrite the projections") {
                $0.append(states.keys.map { ByteBuffer(string: $0) })
                $0.append(states.values.map { ByteBuffer(bytes: $0) })
            })
        }
        if let records {
            let sql = Self.replaceSQL(t.records, keys: [("kind", "int2"), ("owner", "bytea"), ("id", "bytea")])
            try sendNow(PostgresStatement(sql, doing: "rewrite the records") {
                $0.append(records.keys.map(\.kind))
                $0.append(records.keys.map { ByteBuffer(string: $0.owner) })
                $0.append(records.keys.map { ByteBuffer(string: $0.id) })
                $0.append(records.values.map { ByteBuffer(bytes: $0) })
            })
        }
    }

    /// The statement that makes `table` hold exactly the rows bound as arrays ($1… for
    /// `keys`, then the `bytes` column): one hash full join of the table with them finds
    /// the rows gone, changed and new, and only those are written (by their `ctid`).
    static func replaceSQL(_ table: String, keys: [(name: String, type: String)]) -> String {
        let columns = keys + [("bytes", "bytea")]
        let names = columns.map(\.name).joined(separator: ", ")
        let arrays = columns.enumerated().map { "$\($0.offset + 1)::\($0.element.type)[]" }.joined(separator: ", ")
        let first = keys[0].name
        return """
            WITH n AS (SELECT * FROM unnest(\(arrays)) AS n(\(names))),
            diff AS MATERIALIZED (SELECT r.ctid AS rid, \(columns.map { "n." + $0.name }.joined(separator: ", ")) FROM \(table) r
                FULL JOIN n ON \(keys.map { "r.\($0.name) = n.\($0.name)" }.joined(separator: " AND ")) WHERE r.bytes IS DISTINCT FROM n.bytes),
            gone AS (DELETE FROM \(table) r USING diff WHERE r.ctid = diff.rid AND diff.\(first) IS NULL),
            changed AS (UPDATE \(table) r SET bytes = diff.bytes FROM diff WHERE r.ctid = diff.rid AND diff.\(first) IS NOT NULL)
            INSERT INTO \(table) (\(names)) SELECT \(names) FROM diff WHERE rid IS NULL
            """
    }
}
