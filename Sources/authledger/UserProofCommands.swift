import ArgumentParser
import AuthLedger
import AuthLedgerCore
import AuthLedgerServer
import AuthLedgerWitness
import Foundation

/// `authledger prove-user USER`: the user's proof at the index log's newest entry (one is
/// appended first when the log has grown since the last).
struct ProveUser: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prove-user",
        abstract: "Print USER's proof: the events the log holds for USER, committed in the user index and its signed index log.",
        discussion: """
        The answer is at the index log's newest entry (appended first when the log has grown). \
        --json prints what GET /v1/users/{user}/proof answers; authledger verify-user checks it. \
        On a store witnessed by serve --witness-policy, the index log's checkpoint carries the cosignatures it has gathered.
        """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var origin: OriginOption
    @Argument(help: "The user.") var user: String

    func run() async throws {
        try global.requireKeyFiles([.checkpoint], for: "prove-user")
        let ledger = try await global.openLedger()
        let log = try origin.signer(ledger), users = try ledger.usersCheckpointSigner(origin: origin.origin)
        try await ledger.updateUserIndex()
        let p = try await ledger.userProof(user)
        // A store witnessed by `serve --witness-policy`: the index checkpoint with the cosignatures it has.
        let cosigned = try await WitnessedSize.usersCheckpoint(ledger, size: p.entryProof.treeSize)
        if global.json { return Output.json(try p.json(log: log, users: users, usersCheckpoint: cosigned)) }
        Output.line(p.index.count == 0
            ? "\(user) has no events in the log of \(p.index.size)"
            : "\(user) has \(p.index.count) events in the log of \(p.index.size), the newest at seq \(p.index.last)")
        Output.line("stream hash: \(ProofOutput.base64(p.index.streamHash))")
        Output.line("index root: \(ProofOutput.base64(p.index.root)) (\(p.index.proof.siblings.count) siblings)")
        Output.line("index log entry \(p.entryIndex) of \(p.entryProof.treeSize)")
    }
}

/// `authledger verify-user FILE --vkey KEY [--witness-policy P]`: checks a user proof offline.
struct VerifyUser: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-user",
        abstract: "Check a user proof (prove-user --json, GET /v1/users/{user}/proof) against the log's verifier key.",
        discussion: """
        Exit 0 when it holds, saying what it proves; 1 otherwise, saying why on stderr. FILE - reads standard input. \
        With --witness-policy, the index log's checkpoint must also carry cosignatures meeting the policy's quorum \
        (a proof from GET /v1/users/{user}/proof of a server run with that policy, once its witnesses cosigned).
        """
    )

    @Argument(help: "The proof file, or - for standard input.") var file: String
    @Option(help: "The log's verifier key (authledger checkpoint --vkey); the index log's is derived from it.") var vkey: String
    @Option(name: .customLong("witness-policy"), help: "A C2SP tlog-policy file: the index log's checkpoint must meet its quorum.")
    var witnessPolicy: String?

    func run() async throws {
        let key: NoteVerifierKey
        do { key = try NoteVerifierKey(parsing: vkey) } catch { throw ValidationError("--vkey: \(error)") }
        let policy = try witnessPolicy.map(WitnessPolicyFile.load)
        let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file)
        guard let data else { throw ValidationError("cannot read \(file)") }
        let json: JSON
        do { json = try JSON.parse(Array(data)) } catch { throw ValidationError("\(file) is not JSON: \(error)") }
        switch UserProofVerification.check(json, logKey: key, policy: policy) {
        case .success(let summary): Output.line("ok: \(summary)")
        case .failure(let e):
            Output.error("verify-user: FAIL: \(e.message)")
            Foundation.exit(1)
        }
    }
}

/// `authledger audit-index`: every index log entry recomputed from the log.
struct AuditIndex: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit-index",
        abstract: "Recompute every entry of the index log of user proofs from the log: each log root and each user index root.",
        discussion: "Exit 0 with ok: …; 1 with error: tampered: naming the first wrong entry and its size."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let (entries, size) = try await global.openLedger().auditUserIndex()
        if global.json { return Output.json(.object([("ok", .bool(true)), ("entries", .int(Int64(entries))), ("size", .int(Int64(size)))])) }
        Output.line("ok: \(entries) index log entries recomputed from the log (the newest at size \(size))")
    }
}
