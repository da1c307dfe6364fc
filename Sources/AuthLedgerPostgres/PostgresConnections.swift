import AuthLedgerCore
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// The PostgreSQL backend's connections, and the bridge from the ledger's synchronous
/// storage API to PostgresNIO.
///
/// Who waits, and why: `StorageBackend`'s `read` and `write` are synchronous by design
/// (LMDB transactions are bound to the thread that runs them). On PostgreSQL the threads
/// that call them wait for PostgresNIO's answers, in one place, `PostgresSession.answer`
/// (and `acquire` for a new connection): the callers of the blocking forms (`…Blocking`,
/// the CLI, tests, whole-log work such as `verify` and an export, `eraseBlocking`, opening a store
/// and its commit listener's connection, a replay's rebuild of a tree that is not the
/// log's), and the writer's thread in two rare cases of
/// `writeAsync` (a strict retry after PostgreSQL refused a statement, a body that needs an
/// answer at once) — the library's own threads or the caller's, never the cooperative
/// pool's. The async paths never wait: a read (`readAsync`, `PostgresSnapshot+Fill.swift`),
/// the writer's groups, the sweeper's expiry, an erasure (and its VACUUM, `purgeDeletedAsync`) and a replay's write (`writeAsync`,
/// `PostgresAccess+WaitFree.swift`) and its scan (`scanRuns`) acquire with `acquireAsync`
/// and await each answer. Statements go through PostgresNIO's `EventLoopFuture` API,
/// several sent before any answer is awaited where the protocol allows (a write's BEGIN,
/// lock and catch-up; its group statement and COMMIT). The connections run on an event
/// loop group of their own (one thread), never shared with the HTTP server's, so no wait
/// can ever block the loop that must complete it; and nothing waits on a Swift-concurrency
/// task (the cooperative pool has two threads on a 2-core machine: a blocked task waiting
/// for another task could starve it). `blockingWaits` counts the waits (tests check that
/// async reads, appends, the sweeper's expiry, an erasure and a replay add none).
// @unchecked: the idle pool and the id counter are guarded by `lock` (NSLock, taken on PostgresNIO's callbacks too).
package final class PostgresConnections: @unchecked Sendable {
    /// One event loop thread for every PostgreSQL store of the process.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    let location: PostgresLocation
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let lock = NSLock()
    private var idle: [PostgresConnection] = []
    private var nextID = 1
    private var closed = false
    /// Idle connections kept for reuse; more are opened when needed (a replay's workers).
    static let maxIdle = 8

    init(_ location: PostgresLocation) throws {
        self.location = location
        let tls: PostgresConnection.Configuration.TLS
        do {
            switch location.tls {
            case .disable:
                tls = .disable
            case .prefer, .require:
                var c = TLSConfiguration.makeClientConfiguration()
                c.certificateVerification = .none
                let context = try NIOSSLContext(configuration: c)
                tls = location.tls == .prefer ? .prefer(context) : .require(context)
            case .verifyFull:
                tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            throw LedgerError(.storageError, "cannot set up TLS for the PostgreSQL store")
        }
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user,
            password: location.password, database: location.database, tls: tls)
        configuration.options.connectTimeout = .seconds(15)
        self.configuration = configuration
        var logger = Logger(label: "authledger.postgres")
        logger.logLevel = .warning
        self.logger = logger
    }

    deinit { shutdown() }

    /// Blocking waits for PostgresNIO of this store's connections (`PostgresSession.answer`):
    /// what the tests check that an async read never adds to.
    package let blockingWaits = PostgresCounter()

    /// An idle connection, or a new one, the calling thread waiting for the connection
    /// (the blocking forms' threads).
    package func acquire() throws -> PostgresSession {
        if let s = try take() { return s }
        return try connected { try PostgresSession.answer($0, counting: blockingWaits) }
    }

    /// An idle connection, or a new one, without blocking the calling thread (async reads).
    package func acquireAsync() async throws -> PostgresSession {
        if let s = try take() { return s }
        let connecting = connect()
        do {
            return session(try await connecting.future.get())
        } catch {
            throw PostgresFailure(error, doing: "connect", location: location).ledgerError
        }
    }

    /// An idle connection of the pool, or nil (then a new one is to be opened).
    private func take() throws -> PostgresSession? {
        try lock.withLock {
            if closed { throw LedgerError(.storageError, "the PostgreSQL store is closed") }
            while let c = idle.last, c.isClosed { idle.removeLast() }
            return idle.popLast().map { session($0) }
        }
    }

    /// Starts connecting a new connection.
    private func connect() -> (future: EventLoopFuture<PostgresConnection>, id: Int) {
        let id = lock.withLock {
            defer { nextID += 1 }
            return nextID
        }
        return (PostgresConnection.connect(on: PostgresConnections.group.next(), configuration: configuration,
                                           id: id, logger: logger), id)
    }

    /// A new connection, its answer awaited by `wait`.
    private func connected(_ wait: (EventLoopFuture<PostgresConnection>) throws -> PostgresConnection) throws -> PostgresSession {
        do {
            return session(try wait(connect().future))
        } catch {
            throw PostgresFailure(error, doing: "connect", location: location).ledgerError
        }
    }

    private func session(_ c: PostgresConnection) -> PostgresSession {
        PostgresSession(connection: c, logger: logger, location: location, blockingWaits: blockingWaits)
    }

    /// Returns a connection after a transaction ended cleanly; a connection whose state is
    /// unknown (a failed commit or rollback, a lost connection) is closed instead.
    package func release(_ s: PostgresSession, reusable: Bool) {
        lock.lock()
        if reusable && !closed && !s.connection.isClosed && idle.count < PostgresConnections.maxIdle {
            idle.append(s.connection)
            lock.unlock()
            return
        }
        lock.unlock()
        PostgresConnections.close(s.connection)
    }

    /// Closes `c`, keeping it alive until it is closed (PostgresNIO asserts that a
    /// connection is closed before it goes away).
    static func close(_ c: PostgresConnection) {
        if c.isClosed { return }
        c.close().whenComplete { _ in withExtendedLifetime(c) {} }
    }

    /// Closes every idle connection; later acquisitions fail.
    func shutdown() {
        lock.lock()
        closed = true
        let all = idle
        idle = []
        lock.unlock()
        for c in all { PostgresConnections.close(c) }
    }
}

/// One connection in use by one thread or task: blocking queries, or async ones (`run`).
package struct PostgresSession: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    let location: PostgresLocation
    let blockingWaits: PostgresCounter

    /// Sends `sql` with `binds` without waiting (PostgreSQL runs a connection's statements
    /// in the order they were sent).
    func send(_ sql: String, _ binds: PostgresBindings) -> EventLoopFuture<PostgresQueryResult> {
        connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
    }

    /// Runs `sql` with `binds` and waits for all its rows.
    @discardableResult
    package func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings(), doing: String) throws -> [PostgresRow] {
        do {
            return Array(try answer(send(sql, binds)).rows)
        } catch {
            throw PostgresFailure(error, doing: doing, location: location)
        }
    }

    /// The answer of a statement sent: the one place where the synchronous storage API
    /// waits for PostgresNIO (see `PostgresConnections`: the blocking forms' callers and,
    /// rarely, the writer's own thread; never an event loop or the cooperative pool).
    func answer<T: Sendable>(_ future: EventLoopFuture<T>) throws -> T {
        try Self.answer(future, counting: blockingWaits)
    }

    static func answer<T: Sendable>(_ future: EventLoopFuture<T>, counting waits: PostgresCounter) throws -> T {
        waits.add(1)
        return try future.wait()
    }

    /// Runs `statement` and awaits its rows without blocking the calling thread (async reads).
    func run(_ statement: PostgresStatement) async throws -> [PostgresRow] {
        do {
            return Array(try await send(statement.sql, statement.binds).get().rows)
        } catch {
            throw PostgresFailure(error, doing: statement.doing, location: location)
        }
    }
}

/// A failure of the PostgreSQL backend. `spoilsTransaction` when the connection or the
/// transaction cannot go on (the writer then fails the whole group, as for a full LMDB
/// map); a statement the server refused inside a request's savepoint is that request's.
package struct PostgresFailure: TransactionFailure, CustomStringConvertible {
    package let ledgerError: LedgerError
    package let spoilsTransaction: Bool
    /// A statement of a deferred write transaction was refused (see `PostgresAccess`):
    /// the attempt is given up (`spoilsTransaction`) and the write runs again strict.
    var retryStrict = false

    init(_ error: any Error, doing: String, location: PostgresLocation) {
        if let e = error as? PostgresFailure {
            self = e
            return
        }
        if let e = error as? LedgerError {
            ledgerError = e
            spoilsTransaction = false
            return
        }
        let place = "\(location.host):\(location.port)"
        guard let p = error as? PSQLError else {
            // Messages never include the URL or the password (only host and port).
            ledgerError = LedgerError(.storageError, "PostgreSQL at \(place) failed in \(doing) (\(type(of: error)))")
            spoilsTransaction = true
            return
        }
        if p.code == .server, let info = p.serverInfo {
            let state = info[.sqlState] ?? "?"
            // The server's own message (no values: the detail field, which may quote
            // stored values, is left out).
            let message = info[.message] ?? "refused"
            if state == "53100" || state == "53200" {
                ledgerError = LedgerError(.storageFull, "the PostgreSQL store is full (\(message)); nothing of the request was appended")
            } else {
                ledgerError = LedgerError(.storageError, "PostgreSQL refused \(doing): \(message) (SQLSTATE \(state))")
            }
            // Class 08 (connection), 53 (resources), 57 (operator intervention), 58 (system):
            // the transaction cannot go on.
            spoilsTransaction = ["08", "53", "57", "58", "XX"].contains(String(state.prefix(2)))
            return
        }
        let reason: String
        switch p.code {
        case .connectionError: reason = "cannot connect"
        case .serverClosedConnection, .clientClosedConnection: reason = "connection closed"
        case .sslUnsupported: reason = "the server does not offer TLS"
        case .saslError, .unsupportedAuthMechanism, .authMechanismRequiresPassword: reason = "authentication failed"
        default: reason = "\(p.code)"
        }
        ledgerError = LedgerError(.storageError, "PostgreSQL at \(place) failed in \(doing): \(reason)")
        spoilsTransaction = true
    }

    /// The same failure, now fatal to the transaction (a savepoint could not be rolled back).
    init(spoiling e: PostgresFailure) {
        ledgerError = e.ledgerError
        spoilsTransaction = true
    }

    /// This failure in a deferred transaction: a refusal (the transaction itself intact)
    /// makes the attempt run again strict; a broken connection stays what it is.
    var retryingStrict: PostgresFailure {
        guard !spoilsTransaction else { return self }
        var e = PostgresFailure(spoiling: self)
        e.retryStrict = true
        return e
    }

    package var description: String { ledgerError.message }
}
