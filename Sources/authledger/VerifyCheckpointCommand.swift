import ArgumentParser
import AuthLedgerWitness
import Foundation

/// `authledger verify-checkpoint`: the log's signature and the policy's quorum of cosignatures.
struct VerifyCheckpointCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-checkpoint",
        abstract: "Check a cosigned checkpoint: the log's signature and a quorum of witness cosignatures (C2SP tlog-policy).",
        discussion: "Exit 0 when both hold; 1 otherwise, saying why on stderr. FILE - reads standard input."
    )

    @Argument(help: "The checkpoint file (as GET /checkpoint serves it), or - for standard input.") var file: String
    @Option(help: "The log's verifier key (authledger checkpoint --vkey).") var vkey: String
    @Option(name: .customLong("witness-policy"), help: "The C2SP tlog-policy file (witness, group and quorum lines).")
    var witnessPolicy: String

    func run() async throws {
        let key: NoteVerifierKey
        do { key = try NoteVerifierKey(parsing: vkey) } catch { throw ValidationError("--vkey: \(error)") }
        let policy = try WitnessPolicyFile.load(witnessPolicy)
        let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file)
        guard let data else { throw ValidationError("cannot read \(file)") }
        switch CheckpointVerification.check(Array(data), logKey: key, policy: policy) {
        case .success(let summary):
            Output.line("ok: \(summary)")
        case .failure(let e):
            Output.error("verify-checkpoint: FAIL: \(e.message)")
            Foundation.exit(1)
        }
    }
}

/// A `--witness-policy FILE` read for verifying (verify-checkpoint, verify-user): a usage error when unreadable or invalid.
enum WitnessPolicyFile {
    static func load(_ path: String) throws -> WitnessPolicy {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read --witness-policy \(path)") }
        do { return try WitnessPolicy(parsing: String(decoding: data, as: UTF8.self)) } catch {
            throw ValidationError("--witness-policy \(path): \(error)")
        }
    }
}
