import ArgumentParser
import AuthLedgerServer
import AuthLedgerWitness
import Foundation

/// `serve --witness-policy FILE [--witness-interval SECONDS]`.
struct WitnessingOptions: ParsableArguments {
    @Option(name: .customLong("witness-policy"),
            help: "A C2SP tlog-policy file (witness <name> <vkey> <URL>, group, quorum): collect cosignatures of the checkpoints of the log and of the index log; /checkpoint and /users/checkpoint serve the newest meeting the quorum.")
    var policy: String?
    @Option(name: .customLong("witness-interval"), help: "With --witness-policy: seconds between checks of the head for a new checkpoint to send.")
    var interval: Int = 5

    /// The witnessing configuration (nil without --witness-policy); a usage error for a bad file, with its line.
    func configuration() throws -> WitnessingConfiguration? {
        guard let policy else { return nil }
        guard (1...3600).contains(interval) else { throw ValidationError("--witness-interval must be 1 to 3600 seconds") }
        let parsed = try WitnessPolicyFile.load(policy)
        do {
            var c = try WitnessingConfiguration(policy: parsed)
            c.interval = .seconds(interval)
            return c
        } catch {
            throw ValidationError("--witness-policy \(policy): \(error)")
        }
    }
}
