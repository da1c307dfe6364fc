import AuthLedgerCore
import Logging
import Synchronization
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// The PostgreSQL backend's connections: PostgresNIO's `PostgresClient` (its pool).
///
/// Every path — a read (`readAsync`), the writer's groups, the sweeper's expiry, an erasure
/// and its VACUUM, a replay's write and its scan, opening a store, an export — leases a
/// pooled connection for its transaction (`withSession`) and awaits every answer; the
/// schema's migration and the commit listener use a connection of their own
/// (`withDedicated`). Nothing waits for PostgreSQL on a thread: the driver has no
/// synchronous read or write (issue 34 took them out). The connections run on an event
/// loop group of their own (one thread), never shared with the HTTP server's.
package final class PostgresConnections: Sendable {
    /// One event loop thread for every PostgreSQL store of the process.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    /// Pooled connections at most per store (a replay's scan and a write run at once).
    static let maxConnections = 16

    let location: PostgresLocation
    /// The pool of the async paths.
    let client: PostgresClient
    /// The client's background work (`PostgresClient.run`), cancelled when the store closes.
    private let running: Task<Void, Never>
    /// The configuration of a connection of its own (`withDedicated`).
    private let configuration: PostgresConnection.Configuration
    package let logger: Logger
    private let closed = Atomic<Bool>(false)

    init(_ location: PostgresLocation) throws {
        self.location = location
        // `prefer` and `require` check no certificate (as libpq's); `verify-full` checks it and the name.
        var c = TLSConfiguration.makeClientConfiguration()
        if location.tls != .verifyFull { c.certificateVerification = .none }
        func context() throws -> NIOSSLContext {
            do { return try NIOSSLContext(configuration: c) } catch {
                throw LedgerError(.storageError, "cannot set up TLS for the PostgreSQL store")
            }
        }
        let (tls, clientTLS): (PostgresConnection.Configuration.TLS, PostgresClient.Configuration.TLS) = switch location.tls {
        case .disable: (.disable, .disable)
        case .prefer: (.prefer(try context()), .prefer(c))
        case .require, .verifyFull: (.require(try context()), .require(c))
        }
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user,
            password: location.password, database: location.database, tls: tls)
        configuration.options.connectTimeout = .seconds(15)
        self.configuration = configuration
        var logger = Logger(label: "authledger.postgres")
        logger.logLevel = .warning
        self.logger = logger
        var pooled = PostgresClient.Configuration(host: location.host, port: location.port, username: location.user,
                                                  password: location.password, database: location.database, tls: clientTLS)
        pooled.options.connectTimeout = .seconds(15)
        pooled.options.maximumConnections = Self.maxConnections
        pooled.options.connectionIdleTimeout = .seconds(30)
        // Each release of a connection starts the pool's idle and keep-alive timers (three
        // tasks and a timer each, cancelled by the next lease), and a cancelled sleep keeps
        // its memory until its deadline (swiftlang/swift #60441): at a query's rate, timers of
        // 30 s held ~30 MB. The pool leases its first idle connection, so one-at-a-time
        // queries reuse the one connection kept open, which gets no idle timer; with no
        // keep-alive ping, it gets no timer at all.
        pooled.options.minimumConnections = 1
        pooled.options.keepAliveBehavior = nil
        let client = PostgresClient(configuration: pooled, eventLoopGroup: Self.group, backgroundLogger: logger)
        self.client = client
        running = Task { await client.run() }
    }

    deinit { running.cancel() }

    /// Runs `body` on a pooled connection, leased for its duration. `body` ends the
    /// transaction it began; a connection it leaves in an unknown state it closes
    /// (`PostgresSession.discard`), and the pool opens another. A failure of PostgreSQL's
    /// comes out as the ledger's error (`PostgresFailure.ledgerError`).
    package func withSession<T: Sendable>(_ body: (PostgresSession) async throws -> T) async throws -> T {
        if closed.load(ordering: .relaxed) { throw LedgerError(.storageError, "the PostgreSQL store is closed") }
        var leased = false
        do {
            for attempt in 1... {
                // (A connection that closed while idle, its close not yet seen by the pool: another.)
                let outcome: T?? = try await client.withConnection { c in
                    if c.isClosed && attempt < 3 { return nil }
                    leased = true
                    return .some(try await body(session(c)))
                }
                if let outcome { return outcome! }
            }
            preconditionFailure()
        } catch let error where !leased {
            throw PostgresFailure(error, doing: "connect", location: location).ledgerError
        } catch let e as PostgresFailure {
            throw e.ledgerError
        }
    }

    /// Runs `body` on a connection of its own, outside the pool (the commit listener's: a
    /// connection that LISTENs is never handed to a transaction), closed after.
    package func withDedicated<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        if closed.load(ordering: .relaxed) { throw LedgerError(.storageError, "the PostgreSQL store is closed") }
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(on: Self.group.next(), configuration: configuration,
                                                              id: Int.random(in: 1...Int(Int32.max)), logger: logger).get()
        } catch {
            throw PostgresFailure(error, doing: "connect", location: location).ledgerError
        }
        defer { session(connection).discard() }
        return try await body(connection)
    }

    func session(_ c: PostgresConnection) -> PostgresSession {
        PostgresSession(connection: c, logger: logger, location: location)
    }

    /// Closes the pool; later acquisitions fail.
    func shutdown() {
        closed.store(true, ordering: .relaxed)
        running.cancel()
    }
}

/// One connection in use by one task.
package struct PostgresSession: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    let location: PostgresLocation

    /// Sends `sql` with `binds` without waiting (PostgreSQL runs a connection's statements
    /// in the order they were sent).
    func send(_ sql: String, _ binds: PostgresBindings) -> EventLoopFuture<PostgresQueryResult> {
        connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger)
    }

    /// Sends `statement` without waiting; `answers` awaits its answer.
    func send(_ statement: PostgresStatement) -> PostgresSent { (send(statement.sql, statement.binds), statement.doing) }

    /// Awaits the answers of statements sent, every one of them; throws the first failure.
    func answers(_ sent: [PostgresSent]) async throws -> [PostgresQueryResult] {
        let answers = try await EventLoopFuture.whenAllComplete(sent.map(\.answer), on: connection.eventLoop).get()
        return try zip(answers, sent).map { answer, sent in
            do { return try answer.get() } catch { throw PostgresFailure(error, doing: sent.doing, location: location) }
        }
    }

    /// Closes the connection (its state unknown), keeping it alive
    /// until it is closed (PostgresNIO asserts that a connection is closed before it goes away).
    package func discard() {
        let c = connection
        if c.isClosed { return }
        c.close().whenComplete { _ in withExtendedLifetime(c) {} }
    }

    /// Sends COMMIT or ROLLBACK and awaits it: a connection whose end failed is discarded.
    func end(_ statement: String) async {
        do { _ = try await send(statement, PostgresBindings()).get() } catch { discard() }
    }

    /// Runs `sql` with `binds` and awaits all its rows (the calling thread never waits).
    @discardableResult
    package func execute(_ sql: String, _ binds: PostgresBindings = PostgresBindings(), doing: String) async throws -> [PostgresRow] {
        Array(try await answers([(send(sql, binds), doing)])[0].rows)
    }

    /// Sends `reads` together (after `begun`, a transaction's BEGIN, whose answer is checked
    /// with theirs), awaits every answer, then gives each one's rows to its `keep`: one round trip.
    func load(_ reads: [PostgresRead], begun: EventLoopFuture<PostgresQueryResult>? = nil) async throws {
        guard begun != nil || !reads.isEmpty else { return }
        let answers = try await answers((begun.map { [($0, "begin")] } ?? []) + reads.map { send($0.statement) })
        for (read, answer) in zip(reads, answers.suffix(reads.count)) { try read.keep(Array(answer.rows)) }
    }
}

/// A read statement and what keeps its rows (`PostgresSession.load`).
typealias PostgresRead = (statement: PostgresStatement, keep: ([PostgresRow]) throws -> Void)

/// A statement sent, its answer to come, and what it does (named in its failure).
typealias PostgresSent = (answer: EventLoopFuture<PostgresQueryResult>, doing: String)

/// A failure of the PostgreSQL backend. `spoilsTransaction` when the connection or the
/// transaction cannot go on (the writer then fails the whole group, as for a full LMDB
/// map); a statement the server refused inside a request's savepoint is that request's.
package struct PostgresFailure: TransactionFailure, CustomStringConvertible {
    package let ledgerError: LedgerError
    package private(set) var spoilsTransaction: Bool
    /// A statement of a write transaction was refused, the transaction intact (see
    /// `PostgresAccess`): its requests' writes went together, so the group is given up
    /// (`spoilsTransaction`) and its requests run again one per transaction.
    var refusedInGroup = false

    /// The failure of PostgresNIO's `error` (every caller wraps one: a connection's, a statement's).
    init(_ error: any Error, doing: String, location: PostgresLocation) {
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

    /// This failure in a write transaction: a refusal (the transaction itself intact) is
    /// the group's (`refusedInGroup`); a broken connection stays what it is.
    var inGroup: PostgresFailure {
        guard !spoilsTransaction else { return self }
        var e = self
        (e.spoilsTransaction, e.refusedInGroup) = (true, true)
        return e
    }

    package var description: String { ledgerError.message }
}
