import ArgumentParser
import AuthLedger
import Foundation

/// `--origin` of the verifiable-log commands.
struct OriginOption: ParsableArguments {
    @Option(help: "The log's origin, the checkpoint's first line and key name (default $AUTHLEDGER_ORIGIN, else \(CheckpointSigner.defaultOrigin): set your own).")
    var origin: String?

    func signer(_ ledger: Ledger) throws -> CheckpointSigner {
        let signer = try ledger.checkpointSigner(origin: origin)
        if signer.origin == CheckpointSigner.defaultOrigin {
            Output.error("warning: checkpoints are signed for the default origin \(CheckpointSigner.defaultOrigin); set --origin or AUTHLEDGER_ORIGIN to your log's own name")
        }
        return signer
    }
}

enum ProofOutput {
    static func base64(_ h: Hash32) -> String { Data(h.bytes).base64EncodedString() }
    static func list(_ hs: [Hash32]) -> JSON { .array(hs.map { .string(base64($0)) }) }
}

struct CheckpointCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoint",
        abstract: "Print the signed checkpoint of the log (C2SP tlog-checkpoint), or the verifier key.",
        discussion: """
        The key is checkpoint.key in the store directory (created 0600 on first use) or \
        $AUTHLEDGER_CHECKPOINT_KEY_FILE. --vkey prints the verifier key in the form Go's \
        golang.org/x/mod/sumdb/note takes (<origin>+<key id>+<base64 key>).
        """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var origin: OriginOption
    @Option(help: "The tree size to sign (default the head).") var size: UInt64?
    @Flag(help: "Print the verifier key instead.") var vkey = false
    @Flag(help: "The index log's (origin <origin>/users): its checkpoint, after appending an entry when the log has grown, or its verifier key.")
    var users = false

    func run() async throws {
        try global.requireKeyFiles([.checkpoint], for: "checkpoint")
        let ledger = try await global.openLedger()
        var signer = try origin.signer(ledger)
        if users { signer = try ledger.usersCheckpointSigner(origin: origin.origin) }
        if vkey {
            if global.json { return Output.json(.object([("origin", .string(signer.origin)), ("vkey", .string(signer.verifierKey))])) }
            return Output.line(signer.verifierKey)
        }
        if users && size == nil { try await ledger.updateUserIndex() }
        let note = users ? try await ledger.usersCheckpoint(size: size, signer: signer) : try await ledger.checkpoint(size: size, signer: signer)
        if global.json { return Output.json(.object([("checkpoint", .string(note))])) }
        FileHandle.standardOutput.write(Data(note.utf8))
    }
}

struct Prove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print an inclusion proof of the event SEQ in the tree of --size events (default the head), with that size's checkpoint."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var origin: OriginOption
    @Argument(help: "The event's seq.") var seq: UInt64
    @Option(help: "The tree size to prove against (default the head).") var size: UInt64?

    func run() async throws {
        try global.requireKeyFiles([.checkpoint], for: "prove")
        let ledger = try await global.openLedger()
        let signer = try origin.signer(ledger)
        let p = try await ledger.inclusionProof(seq: seq, size: size)
        let note = try signer.sign(size: p.treeSize, root: p.root)
        if global.json {
            return Output.json(.object([
                ("treeSize", .int(Int64(p.treeSize))), ("leafIndex", .int(Int64(p.leafIndex))),
                ("proof", ProofOutput.list(p.proof)), ("root", .string(ProofOutput.base64(p.root))),
                ("checkpoint", .string(note)),
            ]))
        }
        Output.line("inclusion proof: seq \(seq) is leaf \(p.leafIndex) of the tree of \(p.treeSize) events")
        Output.line("leaf hash: \(ProofOutput.base64(p.leafHash))")
        Output.line("root: \(ProofOutput.base64(p.root))")
        Output.line("proof (\(p.proof.count) hashes, from the leaf up):")
        for h in p.proof { Output.line("  " + ProofOutput.base64(h)) }
        Output.line("checkpoint:")
        FileHandle.standardOutput.write(Data(note.utf8))
    }
}

struct ProveConsistency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prove-consistency",
        abstract: "Print a consistency proof that the tree of NEW events extends the tree of OLD, with NEW's checkpoint."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var origin: OriginOption
    @Argument(help: "The older tree size (at least 1).") var old: UInt64
    @Argument(help: "The newer tree size (at most the head).") var new: UInt64

    func run() async throws {
        try global.requireKeyFiles([.checkpoint], for: "prove-consistency")
        let ledger = try await global.openLedger()
        let signer = try origin.signer(ledger)
        let p = try await ledger.consistencyProof(from: old, to: new)
        let note = try signer.sign(size: p.newSize, root: p.newRoot)
        if global.json {
            return Output.json(.object([
                ("treeSize", .int(Int64(p.newSize))), ("oldSize", .int(Int64(p.oldSize))),
                ("proof", ProofOutput.list(p.proof)), ("root", .string(ProofOutput.base64(p.newRoot))),
                ("oldRoot", .string(ProofOutput.base64(p.oldRoot))), ("checkpoint", .string(note)),
            ]))
        }
        Output.line("consistency proof: the tree of \(p.newSize) events extends the tree of \(p.oldSize)")
        Output.line("old root: \(ProofOutput.base64(p.oldRoot))")
        Output.line("root: \(ProofOutput.base64(p.newRoot))")
        Output.line("proof (\(p.proof.count) hashes):")
        for h in p.proof { Output.line("  " + ProofOutput.base64(h)) }
        Output.line("checkpoint:")
        FileHandle.standardOutput.write(Data(note.utf8))
    }
}
