import ArgumentParser
import AuthLedger
import AuthLedgerServer
import AuthLedgerSharedSignals
import Foundation

/// `serve` options of the Shared Signals transmitter.
struct SharedSignalsOptions: ParsableArguments {
    @Option(name: .customLong("ssf-issuer"), help: "Shared Signals issuer URL (iss of every SET; default http://<host>:<port>, or AUTHLEDGER_SSF_ISSUER). Use https in production.")
    var issuer: String?
    @Option(name: .customLong("ssf-key-dir"), help: "Directory of the SET signing keys (default AUTHLEDGER_SSF_KEY_DIR, else ssf-keys in the store).")
    var keyDirectory: String?
    @Option(name: .customLong("ssf-retry-max"), help: "Push delivery: the longest wait between retries, in seconds.")
    var retryMax: Double = 60
    @Option(name: .customLong("ssf-poll-wait"), help: "Poll delivery: the longest a poll without returnImmediately waits for a SET, in seconds (default 15).")
    var pollWait: Double = 15

    /// `AUTHLEDGER_SSF_KEY_DIR` (nil when unset or empty).
    static var environmentKeyDirectory: String? {
        guard let d = ProcessInfo.processInfo.environment["AUTHLEDGER_SSF_KEY_DIR"], !d.isEmpty else { return nil }
        return d
    }

    func apply(to c: inout SharedSignalsConfiguration) throws {
        if let i = issuer ?? ProcessInfo.processInfo.environment["AUTHLEDGER_SSF_ISSUER"], !i.isEmpty {
            guard let u = URL(string: i), ["https", "http"].contains(u.scheme ?? ""), u.host != nil, u.query == nil, u.fragment == nil else {
                throw ValidationError("--ssf-issuer must be an http(s) URL without query or fragment")
            }
            c.issuer = i
        }
        c.keyDirectory = keyDirectory ?? SharedSignalsOptions.environmentKeyDirectory
        guard retryMax > 0, retryMax.isFinite, retryMax <= 86_400 else { throw ValidationError("--ssf-retry-max must be between 0 and 86400 seconds") }
        c.retryMax = .milliseconds(Int64(retryMax * 1000))
        if c.retryInitial > c.retryMax { c.retryInitial = c.retryMax }
        guard pollWait >= 0.1, pollWait <= 300 else { throw ValidationError("--ssf-poll-wait must be between 0.1 and 300 seconds") }
        c.pollWait = .milliseconds(Int64(pollWait * 1000))
    }
}

/// `authledger ssf-rotate-key`: a new SET signing key; the old ones stay in the JWKS
/// for the retention period. A running server picks it up within seconds.
struct SSFRotateKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssf-rotate-key",
        abstract: "Add a new Shared Signals signing key (RS256); replaced keys stay published for --retention-days."
    )
    @OptionGroup var global: GlobalOptions
    @Option(name: .customLong("ssf-key-dir"), help: "Directory of the SET signing keys (default AUTHLEDGER_SSF_KEY_DIR, else ssf-keys in the store).")
    var keyDirectory: String?
    @Option(name: .customLong("retention-days"), help: "How long replaced keys stay in the JWKS.")
    var retentionDays = 7

    func run() async throws {
        guard retentionDays >= 0, retentionDays <= 3650 else { throw ValidationError("--retention-days must be 0…3650") }
        guard let dir = keyDirectory ?? SharedSignalsOptions.environmentKeyDirectory ?? SSFKeys.defaultDirectory(storePath: global.configuration.keyDirectory) else {
            throw ValidationError("no key directory")
        }
        let keys = try SSFKeys(directory: dir, retention: .seconds(Int64(retentionDays) * 86_400))
        let kid = try keys.rotate()
        if global.json {
            Output.line(JSON.object([("kid", .string(kid)), ("published", .array(keys.published.map { .string($0.kid) }))]).serialized())
        } else {
            Output.line("new signing key \(kid); published: \(keys.published.map(\.kid).joined(separator: ", "))")
        }
    }
}

/// `authledger bench-ssf`: runs `authledger-bench ssf` (the benchmark lives in its own
/// executable, not in the libraries the CLI links).
struct SSFBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-ssf",
        abstract: "Measure Shared Signals SET signing and delivery (push and poll) in a temporary store; prints JSON."
    )
    @Option(help: "Ledger events to append (each becomes one SET).") var events = 10_000
    @Option(help: "Append rate, events per second (0: as fast as possible).") var rate = 2000

    func run() async throws {
        guard events > 0, events <= 10_000_000, rate >= 0 else { throw ValidationError("--events 1…10000000, --rate ≥ 0") }
        try BenchForward.exec(["ssf", "--events", "\(events)", "--rate", "\(rate)"])
    }
}
