import ArgumentParser
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import CLMDB
import CSQLite
import Foundation
import LMDB

/// The raw ceilings the ledger is measured against in the same run: plain LMDB puts,
/// durable commits and a cursor scan, and SQLite inserts, of the same payloads.
extension BenchRun {
    /// The payloads the raw ceilings store: the bench events in our storage encoding
    /// (with a zero chain and a fixed id), one batch at a time, outside the timed part.
    struct Payloads {
        var workload: BenchWorkload
        var buffer: [UInt8] = []
        var ends: [Int] = []

        init(total: Int) { workload = BenchWorkload(total: total, start: BenchRun.start) }

        mutating func nextBatch() -> Bool {
            buffer.removeAll(keepingCapacity: true)
            ends.removeAll(keepingCapacity: true)
            while ends.count < BenchRun.batch, var e = workload.next() {
                e.id = EventID(high: 0x0123_4567_89ab_4cde, low: 0x8123_4567_89ab_cdef + UInt64(ends.count))
                let r = RecordedEvent(event: e, seq: UInt64(workload.produced), version: 1, prev: .zero, hash: .zero)
                buffer.append(contentsOf: EventCodec.encode(r))
                ends.append(buffer.count)
            }
            return !ends.isEmpty
        }

        func withPayload<T>(_ k: Int, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            let from = k == 0 ? 0 : ends[k - 1]
            return try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[from..<ends[k]])) }
        }
    }

    func rawLMDBPut() throws -> Double {
        let env = try Environment(path: try makeDir("raw-lmdb"))
        let db = try env.database("events")
        var payloads = Payloads(total: events)
        var seq: UInt64 = 0, elapsed = 0.0
        while payloads.nextBatch() {
            let first = seq
            elapsed += try BenchRun.seconds {
                try env.write { txn in
                    seq = first
                    for k in 0..<payloads.ends.count {
                        seq += 1
                        var key = seq.bigEndian
                        try withUnsafeBytes(of: &key) { kb in
                            try payloads.withPayload(k) { v in try txn.put(db, kb, v, flags: UInt32(MDB_APPEND)) }
                        }
                    }
                }
            }
        }
        return Double(events) / elapsed
    }

    /// One event per durable commit: the latency floor of any acknowledged append
    /// (two fdatasyncs), which bounds group commit at `writers` events per commit.
    func rawLMDBCommit() throws -> (rate: Double, p50: Double, p99: Double) {
        let env = try Environment(path: try makeDir("raw-lmdb-commit"))
        let db = try env.database("events")
        var payloads = Payloads(total: 300)
        _ = payloads.nextBatch()
        var lat: [Double] = []
        let n = min(300, payloads.ends.count)
        let total = try BenchRun.seconds {
            for k in 0..<n {
                let s = DispatchTime.now().uptimeNanoseconds
                try env.write { txn in
                    var key = UInt64(k + 1).bigEndian
                    try withUnsafeBytes(of: &key) { kb in
                        try payloads.withPayload(k) { v in try txn.put(db, kb, v, flags: UInt32(MDB_APPEND)) }
                    }
                }
                lat.append(Double(DispatchTime.now().uptimeNanoseconds - s) / 1e6)
            }
        }
        lat.sort()
        return (Double(n) / total, BenchRun.percentile(lat, 0.5), BenchRun.percentile(lat, 0.99))
    }

    func rawLMDBScan() throws -> Double {
        let env = try Environment(path: base + "/raw-lmdb")
        let db = try env.database("events")
        var n = 0, bytes = 0
        let elapsed = try BenchRun.seconds {
            try env.read { txn in
                let c = try txn.cursor(db)
                var entry = try c.first()
                while let (_, v) = entry {
                    n += 1
                    bytes &+= Int(v[v.count - 1])
                    entry = try c.next()
                }
            }
        }
        precondition(n == events, "raw scan saw \(n) of \(events) events")
        _ = bytes
        return Double(n) / elapsed
    }

    func rawSQLitePut() throws -> Double {
        var db: OpaquePointer?
        guard sqlite3_open(try makeDir("raw-sqlite") + "/events.db", &db) == SQLITE_OK, let db else {
            throw LedgerError(.storageError, "sqlite open failed")
        }
        defer { sqlite3_close(db) }
        func exec(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
                throw LedgerError(.storageError, "sqlite: \(String(cString: sqlite3_errmsg(db)))")
            }
        }
        try exec("PRAGMA journal_mode=WAL")
        try exec("PRAGMA synchronous=FULL")
        try exec("CREATE TABLE events (seq INTEGER PRIMARY KEY, data BLOB NOT NULL)")
        var stmt: OpaquePointer?
        guard sqlite3_prepare_v2(db, "INSERT INTO events (seq, data) VALUES (?, ?)", -1, &stmt, nil) == SQLITE_OK else {
            throw LedgerError(.storageError, "sqlite prepare failed")
        }
        defer { sqlite3_finalize(stmt) }
        var payloads = Payloads(total: events)
        var seq: Int64 = 0, elapsed = 0.0
        while payloads.nextBatch() {
            elapsed += try BenchRun.seconds {
                try exec("BEGIN")
                for k in 0..<payloads.ends.count {
                    seq += 1
                    sqlite3_bind_int64(stmt, 1, seq)
                    let rc = payloads.withPayload(k) { v in
                        sqlite3_bind_blob(stmt, 2, v.baseAddress, Int32(v.count), nil)
                        return sqlite3_step(stmt)
                    }
                    guard rc == SQLITE_DONE else { throw LedgerError(.storageError, "sqlite insert failed") }
                    sqlite3_reset(stmt)
                }
                try exec("COMMIT")
            }
        }
        return Double(events) / elapsed
    }
}
