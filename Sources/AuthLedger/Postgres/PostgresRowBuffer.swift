import AuthLedgerCore
import PostgresNIO

/// Rows of one table waiting to be written as one multi-row INSERT (see
/// `PostgresAccess`): a commit group's events, tree hashes, personal values and
/// projections go to PostgreSQL in a few statements instead of one each, which is where
/// the writer's time went (parsing, planning and answering each statement). Hand-written
/// because PostgresNIO has no batch insert; the bindings are still parameters, never text.
struct PostgresRowBuffer {
    /// `INSERT INTO table (a, b, c)`, the columns' count, what follows VALUES (an ON CONFLICT clause or nothing).
    let insert: String
    let columns: Int
    let suffix: String
    let doing: String
    /// Rows per statement: PostgreSQL takes at most 65,535 parameters.
    let limit: Int
    private(set) var rows = 0
    private(set) var bindings = PostgresBindings()

    init(insert: String, columns: Int, suffix: String = "", doing: String) {
        self.insert = insert
        self.columns = columns
        self.suffix = suffix
        self.doing = doing
        limit = max(1, 8_000 / columns)
    }

    var isEmpty: Bool { rows == 0 }
    var isFull: Bool { rows >= limit }

    /// Adds one row: `add` appends exactly `columns` bindings.
    mutating func append(_ add: (inout PostgresBindings) -> Void) {
        add(&bindings)
        rows += 1
    }

    /// The statement for the rows so far, and empties the buffer.
    mutating func take() -> (sql: String, bindings: PostgresBindings) {
        var sql = insert + " VALUES "
        var n = 0
        for r in 0..<rows {
            if r > 0 { sql += ", " }
            sql += "("
            for c in 0..<columns {
                n += 1
                sql += c == 0 ? "$\(n)" : ", $\(n)"
            }
            sql += ")"
        }
        sql += suffix
        let b = bindings
        bindings = PostgresBindings()
        rows = 0
        return (sql, b)
    }

    mutating func discard() {
        bindings = PostgresBindings()
        rows = 0
    }
}
