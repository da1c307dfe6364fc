import AuthLedger
import AuthLedgerCore
import NIOCore
import PostgresNIO

/// The replay's one scan without any thread waiting (`AsyncBatchScanning`): the runs of
/// `PostgresAccess+Runs.swift`, each one's answers awaited while the next one is on its way,
/// in one REPEATABLE READ snapshot on a pooled connection, ended as an async read ends
/// (`PostgresSession.end`).
extension PostgresStorage: AsyncBatchScanning {
    package func scanRuns(from: UInt64, through: UInt64, run: Int, start: (Bool) -> Void, put: (LogBatch) -> Bool) async throws {
        try await connections.withSession { s in
            do {
                let outside = PostgresAccess.treeOutsideStatement(tables, MerkleTree.storedHashCount(through))
                let sent = [s.send("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", PostgresBindings()), s.send(outside.sql, outside.binds)]
                let answers = try await EventLoopFuture.whenAllComplete(sent, on: s.connection.eventLoop).get()
                for (answer, doing) in zip(answers, ["begin", outside.doing]) {
                    if case let .failure(error) = answer { throw PostgresFailure(error, doing: doing, location: s.location) }
                }
                start(try PostgresAccess.treeOutside(Array(try answers[1].get().rows)))
                var next = max(from, 1)
                func request() -> (EventLoopFuture<[Result<PostgresQueryResult, any Error>]>, from: UInt64, count: Int)? {
                    guard next <= through else { return nil }
                    let n = Int(min(UInt64(run), through - next + 1))
                    defer { next += UInt64(n) }
                    return (PostgresAccess.sendRun(s, tables, from: next, count: n), next, n)
                }
                var current = request()
                while let (answer, from, count) = current {
                    let following = request()
                    guard put(try PostgresAccess.run(try await answer.get(), from: from, count: count, location: s.location)) else { break }
                    current = following
                }
            } catch {
                await s.end("ROLLBACK")
                throw (error as? PostgresFailure)?.ledgerError ?? error
            }
            await s.end("COMMIT")
        }
    }
}
