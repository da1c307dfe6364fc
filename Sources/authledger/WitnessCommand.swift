import ArgumentParser
import AuthLedgerWitness
import Foundation
import Logging
import ServiceLifecycle

/// `authledger witness`: a C2SP tlog-witness for the logs listed in `--logs`.
struct WitnessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "witness",
        abstract: "Run a witness (C2SP tlog-witness): cosign checkpoints of the logs it watches when they extend what it saw.",
        discussion: """
        --logs FILE lists the logs, one verifier key per line (as `authledger checkpoint --vkey` prints it; \
        the key's name is the origin; blank lines and # comments ignored). --key FILE is the witness's Ed25519 key, \
        created 0600 on first use with the name --name. --store DIR (LMDB) keeps the latest size and root hash \
        per origin. It serves POST /add-checkpoint, GET /health and GET /metrics on --host:--port.
        `witness --vkey --key FILE` prints the witness's verifier key (give it to the logs' operators).
        """
    )

    @Option(help: "The witness's key file (created 0600 on first use with --name).") var key: String
    @Option(help: "The witness's name (a schema-less URL, e.g. witness.example.com/w1), when creating the key.") var name: String?
    @Flag(help: "Print the witness's verifier key and exit.") var vkey = false
    @Option(help: "A file of the logs' verifier keys, one per line.") var logs: String?
    @Option(help: "The witness's state directory (LMDB).") var store: String?
    @Option(help: "Interface to listen on.") var host = "127.0.0.1"
    @Option(help: "TCP port (0: any free port, printed on stderr).") var port = 8090
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func run() async throws {
        let cosigner: Cosigner
        do { cosigner = try CosignerKeyFile.load(path: key, name: name) } catch let e as NoteError {
            throw ValidationError("--key: \(e)")
        }
        if vkey { return Output.line(cosigner.verifierKey.description) }
        guard let logs, let store else { throw ValidationError("--logs FILE and --store DIR are required to run the witness") }
        guard let data = FileManager.default.contents(atPath: logs) else { throw ValidationError("cannot read --logs \(logs)") }
        let keys: [NoteVerifierKey]
        do { keys = try WitnessCommand.parseLogs(String(decoding: data, as: UTF8.self)) } catch let e as NoteError {
            throw ValidationError("--logs \(logs): \(e)")
        }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("unknown --log-level \(logLevel)") }
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "authledger.witness")
        let witness = Witness(cosigner: cosigner, logs: keys, store: try WitnessStore(path: store), logger: logger)
        let host = self.host
        let app = WitnessServer(witness: witness).application(host: host, port: port, logger: logger) { port in
            logger.notice("witness listening", metadata: ["host": "\(host)", "port": "\(port)", "vkey": "\(cosigner.verifierKey)"])
        }
        try await ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)).run()
    }

    /// The `--logs` file: one `0x01` verifier key a line; blank lines and `#` comments ignored.
    static func parseLogs(_ text: String) throws -> [NoteVerifierKey] {
        var keys: [NoteVerifierKey] = []
        for (k, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            do {
                let key = try NoteVerifierKey(parsing: line)
                guard key.type == NoteVerifierKey.ed25519 else { throw NoteError("a log key is an Ed25519 note key (type 0x01)") }
                keys.append(key)
            } catch let e as NoteError { throw NoteError(e.message, line: k + 1) }
        }
        guard !keys.isEmpty else { throw NoteError("no log keys") }
        return keys
    }
}
