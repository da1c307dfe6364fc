import ArgumentParser
import AuthLedger
import AuthLedgerLMDB
import AuthLedgerPostgres
import Foundation

/// Options every subcommand takes (they may also stand before the subcommand's name).
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The store: an LMDB directory or a postgresql:// URL (default $AUTHLEDGER_STORE, else ./authledger-data).")
    var store: String?

    @Option(name: .long, help: "The clock: when commands run, and the default as-of of queries (RFC 3339).")
    var now: String?

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    var storePath: String {
        if let store { return store }
        if let env = ProcessInfo.processInfo.environment["AUTHLEDGER_STORE"], !env.isEmpty { return env }
        return "./authledger-data"
    }

    /// Whether the store is a PostgreSQL database (else an LMDB directory).
    var isPostgres: Bool { PostgresLocation.isPostgres(storePath) }

    /// The ledger's settings from the environment (`AUTHLEDGER_KEY_DIR`,
    /// `AUTHLEDGER_SERVER_KEY_FILE`, `AUTHLEDGER_ORIGIN`, …); the key directory of an LMDB
    /// store is its own directory unless `AUTHLEDGER_KEY_DIR` says otherwise.
    var configuration: Ledger.Configuration {
        var c = Ledger.Configuration.fromEnvironment(ProcessInfo.processInfo.environment)
        if c.keyDirectory == nil && !isPostgres { c.keyDirectory = storePath }
        return c
    }

    /// Opens the store with the driver its name calls for: the only place a string picks one.
    func openLedger() async throws -> Ledger {
        isPostgres ? try await Ledger(postgres: storePath, configuration: configuration)
            : try await Ledger(lmdb: storePath, configuration: configuration)
    }

    /// The store for messages: a PostgreSQL URL without its password.
    var storeName: String { PostgresLocation.displayName(storePath) }

    /// The fixed `--now`, parsed; nil means the system clock.
    func fixedNow() throws -> Timestamp? {
        guard let now else { return nil }
        guard let t = Timestamp(callerTime: now) else {
            throw ValidationError("--now must be an RFC 3339 time with a zone, from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z")
        }
        return t
    }

    /// The clock commands read inside their write transaction.
    func clock() throws -> @Sendable () -> Timestamp {
        if let t = try fixedNow() { return { t } }
        return Timestamp.now
    }
}

/// `--at`, `--as-of`, `--current`, `--include-revoked` of the queries.
struct QueryArguments: ParsableArguments {
    @Option(name: .customLong("at"), help: "Position: replay events with seq <= SEQ (default the head).")
    var position: UInt64?

    @Option(name: .customLong("as-of"), help: "Replay events with at <= TIME and evaluate at TIME (default --now).")
    var asOf: String?

    @Option(name: .long, help: "The device the caller names as its own.")
    var current: String?

    @Flag(name: .customLong("include-revoked"), help: "List revoked devices too.")
    var includeRevoked = false

    @Flag(name: .customLong("from-scratch"), help: "Replay from scratch instead of using maintained projections.")
    var fromScratch = false

    func options(_ g: GlobalOptions, asRequester: Bool = false) throws -> QueryOptions {
        var t = try g.fixedNow() ?? Timestamp.now()
        if let asOf {
            guard let parsed = Timestamp(callerTime: asOf) else {
                throw ValidationError("--as-of must be an RFC 3339 time with a zone, from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z")
            }
            t = parsed
        }
        return QueryOptions(position: position, asOf: t, current: current, includeRevoked: includeRevoked,
                            asRequester: asRequester, fromScratch: fromScratch)
    }
}

/// `--actor` of the commands.
struct ActorOption: ParsableArguments {
    @Option(name: .long, help: "meta.actor: device:<id>, user, service:<name>, admin:<name> or system.")
    var actor: String?

    func meta() throws -> StringMap? {
        guard let actor else { return nil }
        guard EventDecoder.isValidActor(actor) else {
            throw LedgerError.invalid("--actor must be device:<id>, user, service:<name>, admin:<name> or system", field: "actor")
        }
        return StringMap([("actor", actor)])
    }
}

enum Output {
    static func line(_ s: String) {
        FileHandle.standardOutput.write(Data((s + "\n").utf8))
    }

    static func json(_ j: JSON) { line(j.serialized()) }

    static func error(_ s: String) {
        FileHandle.standardError.write(Data((s + "\n").utf8))
    }

    static var stderrIsTerminal: Bool { isatty(2) != 0 }
}
