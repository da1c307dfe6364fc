import AuthLedger
import AuthLedgerCore

/// One log the witness collector sends to the witnesses: the log itself (origin
/// `<origin>`) or the index log of user proofs (`<origin>/users`, reference section 14).
/// Each has its own records (latest and quorum checkpoints, sizes the witnesses hold),
/// tree and signer; the rounds, the lease and the witnesses' loops are the same.
struct WitnessedLog: Sendable {
    let records: WitnessRecords
    /// The tree's size and root.
    let head: @Sendable (Ledger) async throws -> (size: UInt64, root: Hash32)
    /// The consistency proof between two sizes (1 ≤ from ≤ to).
    let consistency: @Sendable (Ledger, UInt64, UInt64) async throws -> [Hash32]
    let signer: @Sendable () throws -> CheckpointSigner
    /// Run before a new checkpoint of the head is signed.
    var beforeSigning: @Sendable (Ledger) async -> Void = { _ in }

    /// The log: the index log gets its entry before a checkpoint of the log is signed, so
    /// that entry never lags a checkpoint sent to the witnesses.
    static func log(_ signer: @escaping @Sendable () throws -> CheckpointSigner) -> WitnessedLog {
        WitnessedLog(records: .log, head: { try await $0.treeHead() },
                     consistency: { try await $0.consistencyProof(from: $1, to: $2).proof }, signer: signer) { ledger in
            if (try? await ledger.userIndexLags()) == true { _ = try? await ledger.updateUserIndex() }
        }
    }

    /// The index log of user proofs, signed by the log's key under `<origin>/users`.
    static func users(_ signer: @escaping @Sendable () throws -> CheckpointSigner) -> WitnessedLog {
        WitnessedLog(records: .users, head: { try await $0.usersTreeHead() },
                     consistency: { try await $0.usersConsistencyProof(from: $1, to: $2).proof }, signer: { try signer().forUsers() })
    }
}
