import AuthLedger
import NIOCore
import PostgresNIO

/// The replay's one scan without any thread waiting (`AsyncBatchScanning`): the runs of
/// `PostgresAccess+Runs.swift`, each one's answers awaited while the next one is on its way,
/// in one snapshot (`readSnapshot`).
extension PostgresStorage: AsyncBatchScanning {
    package func scanRuns(from: UInt64, through: UInt64, run: Int, start: (Bool) -> Void, put: (LogBatch) -> Bool) async throws {
        try await readSnapshot { s, begun in
            let outside = PostgresAccess.treeOutsideStatement(tables, MerkleTree.storedHashCount(through))
            var beyond = true
            try await s.load([(outside, { rows in
                beyond = try rows.first.map { try PostgresRows.decode($0, Bool.self, doing: outside.doing) } ?? true
            })], begun: begun)
            start(beyond)
            var next = max(from, 1)
            func request() -> ([PostgresSent], from: UInt64, count: Int)? {
                guard next <= through else { return nil }
                let n = Int(min(UInt64(run), through - next + 1))
                defer { next += UInt64(n) }
                return (PostgresAccess.sendRun(s, tables, from: next, count: n), next, n)
            }
            var current = request()
            while let (sent, from, count) = current {
                let following = request()
                guard put(try PostgresAccess.run(try await s.answers(sent), from: from, count: count)) else { break }
                current = following
            }
        }
    }
}

extension PostgresStorage {
    /// `verify`'s snapshot (`AsyncBatchScanning.snapshot`, `readSnapshot`): BEGIN sent with
    /// the head and the checkpoint; each step's statements sent together and their answers awaited.
    package func snapshot<T: Sendable>(_ body: (any SnapshotReading) async throws -> T) async throws -> T {
        try await readSnapshot { s, begun in
            let snapshot = PostgresSnapshot(s, tables)
            try await snapshot.reads.loadFirst(s, tables, ReadLoad(), begun: begun)
            return try await body(snapshot)
        }
    }
}

/// The steps of a snapshot (`SnapshotReading`) on its session.
final class PostgresSnapshot: SnapshotReading {
    let session: PostgresSession
    let tables: PostgresTables
    let reads = PostgresLoaded()

    init(_ session: PostgresSession, _ tables: PostgresTables) {
        self.session = session
        self.tables = tables
    }

    var loaded: any StorageReader { reads }

    func load(_ load: ReadLoad) async throws {
        try await session.load(reads.statements(load, tables))
    }

    /// Each run is the first `run` rows from a seq on (a keyset page): a gap or a stray seq
    /// is in the run that reaches it. The next run is asked for from where the current one
    /// ends if it has no gap (a run with one fails `verify`'s check); a short run ends the log.
    func indexedRuns(from: UInt64, run: Int, _ put: (IndexedRun) throws -> Bool) async throws {
        var next = from
        func request() -> ([PostgresSent], from: UInt64) {
            defer { next = max(next, 1) + UInt64(run) }
            return (PostgresAccess.sendIndexedRun(session, tables, from: next, count: run), next)
        }
        var current = request()
        while true {
            let following = request()
            let got = try PostgresAccess.indexedRun(try await session.answers(current.0), from: current.from, count: run)
            guard try put(got), got.events.count == run else { break }
            current = following
        }
    }
}
