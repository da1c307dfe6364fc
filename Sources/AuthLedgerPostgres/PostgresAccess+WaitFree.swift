import AuthLedger
import AuthLedgerCore
import NIOCore
import PostgresNIO

/// A wait-free write transaction (`PostgresStorage.writeAsync`), as an async read's
/// snapshot (`PostgresSnapshot`): the body runs against what was read so far; a read it
/// needs and that was not read is a *miss* — recorded (`needs`) and thrown (a request
/// that meets one fails, and the others go on, so that one run collects the misses of the
/// whole group) — and once the body ended, every miss is fetched in one round trip, with
/// PostgresNIO's answers awaited, and the body runs again from the start (its writes are
/// in memory until it ends: nothing was sent, the transaction is as it began). Statements may be sent while the body runs (a large
/// request's early rows, a SAVEPOINT): their answers are collected at the end
/// (`drainAsync`); a miss after something was sent cannot run again on the same
/// transaction, nor can a step that needs an answer at once (a nested savepoint): those
/// throw `PostgresMustBlock`, and the write is
/// rolled back and done blocking instead (`PostgresStorage.writeAsync`).
struct PostgresWaitFree {
    /// What the current run missed.
    var needs: [PostgresNeed] = []
    /// Rows fetched for the point reads and scans that missed (`PostgresAccess.q`).
    var answers: [PostgresStatementKey: [PostgresRow]] = [:]
    /// Whether this run sent a statement (a miss then cannot run again).
    var sent = false
    /// Whether this run met a step that needs an answer at once.
    var mustBlock = false
    /// `frontierFetched` when the body first ran (after the catch-up).
    var frontierFetched = false
}

/// Something a wait-free run missed.
enum PostgresNeed {
    /// The rows of a read statement.
    case rows(PostgresStatement)
}

/// A statement as a key of what was fetched (its SQL and its binds).
struct PostgresStatementKey: Hashable {
    let sql: String
    let binds: PostgresBindings
}

extension PostgresStatement {
    var key: PostgresStatementKey { PostgresStatementKey(sql: sql, binds: binds) }
}

/// Thrown by a read of a wait-free run that was not fetched yet (a request's own failure:
/// the run is discarded once it ended).
struct PostgresMiss: Error {}

/// A wait-free write met a step that needs an answer at once: it is done blocking instead.
package struct PostgresMustBlock: TransactionFailure {
    package var spoilsTransaction: Bool { true }
}

extension PostgresAccess {
    /// Marks the start of a run of the body: everything it wrote before is forgotten.
    func beginRun() {
        precondition(inFlight.isEmpty, "a wait-free run again after sending")
        pending = PostgresPendingWrites()
        requestPending = nil
        savepointOpen = false
        savepoints = 0
        knownHead = startHead
        lastAtLevel = [:]
        treeCleared = false
        replacing = PostgresReplacement()
        frontierFetched = run.frontierFetched
        run.needs = []
        run.sent = false
        run.mustBlock = false
    }

    /// Records `need` and returns the miss to throw (or, after a send, the blocking fallback).
    func missed(_ need: PostgresNeed) -> any Error {
        if run.sent { return mustBlock() }
        if case let .rows(st) = need, run.needs.contains(where: { if case let .rows(other) = $0 { other.key == st.key } else { false } }) {
            return PostgresMiss()
        }
        run.needs.append(need)
        return PostgresMiss()
    }

    /// Records that the run cannot go on wait-free, and returns the error to throw.
    func mustBlock() -> PostgresMustBlock {
        run.mustBlock = true
        return PostgresMustBlock()
    }

    /// Records a statement sent by the run: the answers fetched before may no longer be what PostgreSQL holds.
    func wrote() {
        run.sent = true
        run.answers = [:]
    }

    /// The rows of `st` fetched for this transaction, or a miss.
    func answered(_ st: PostgresStatement) throws -> [PostgresRow] {
        if let rows = run.answers[st.key] { return rows }
        throw missed(.rows(st))
    }

    /// Fetches what the run missed: the statements sent together, their answers awaited (one round trip).
    func fill() async throws {
        let needs = run.needs
        run.needs = []
        var sent: [EventLoopFuture<PostgresQueryResult>] = []
        for need in needs {
            switch need {
            case .rows(let st): sent.append(s.send(st.sql, st.binds))
            }
        }
        var answers = sent.isEmpty ? [] : try await EventLoopFuture.whenAllComplete(sent, on: s.connection.eventLoop).get()[...]
        for need in needs {
            switch need {
            case .rows(let st):
                let answer = answers.removeFirst()
                try settle([answer], [st.doing])
                run.answers[st.key] = Array(try answer.get().rows)
            }
        }
    }

    /// Awaits the answers of every statement sent; throws the first failure (`drain`, awaited).
    func drainAsync() async throws {
        let sent = inFlight
        inFlight = []
        guard let first = sent.first else { return }
        try settle(try await EventLoopFuture.whenAllComplete(sent.map(\.0), on: first.0.eventLoop).get(), sent.map(\.1))
    }
}
