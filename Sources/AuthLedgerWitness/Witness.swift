import AuthLedger
import AuthLedgerCore
import Foundation
import Logging

/// A C2SP `tlog-witness`: checks a submitted checkpoint against what it holds for the
/// log and, when the consistency proof shows it extends it, records it durably and
/// answers with its `cosignature/v1` line. Checks run in this order: malformed (400),
/// unknown origin (404), no valid signature of the log's key (403), old size beyond the
/// checkpoint's (400), old size not the held one (409 with the held size), proof that
/// does not show consistency — or the held size with another root, a size-0 checkpoint
/// whose root is not the empty tree's, or a proof with `old 0` (422). Resubmitting the held checkpoint answers 200.
public final class Witness: Sendable {
    /// The witness's cosigning key.
    public let cosigner: Cosigner
    let logs: [String: [NoteVerifierKey]]
    let store: WitnessStore
    let now: @Sendable () -> UInt64
    let logger: Logger

    /// A witness signing with `cosigner` for the logs whose (`0x01`) keys are `logs`
    /// (the origin is the key's name), remembering in `store`; `now` gives the time
    /// in seconds since the epoch.
    public init(cosigner: Cosigner, logs: [NoteVerifierKey], store: WitnessStore,
                now: @escaping @Sendable () -> UInt64 = { UInt64(Date().timeIntervalSince1970) },
                logger: Logger = Logger(label: "authledger.witness")) {
        self.cosigner = cosigner
        self.logs = Dictionary(grouping: logs, by: \.name)
        self.store = store
        self.now = now
        self.logger = logger
    }

    /// The answer to an `add-checkpoint` request with `body`.
    public func addCheckpoint(_ body: [UInt8]) async -> WitnessAnswer {
        let request: AddCheckpointRequest
        do { request = try AddCheckpointRequest(parsing: body) } catch {
            return .text(400, "malformed request: \(error)")
        }
        let cp = request.checkpoint
        guard let keys = logs[cp.origin] else { return .text(404, "unknown origin") }
        let results = keys.map { request.note.verified(by: $0) }
        guard !results.contains(false), results.contains(true) else {
            return .text(403, "no valid signature by the log's key")
        }
        guard request.oldSize <= cp.size else { return .text(400, "the old size is greater than the checkpoint's size") }
        let answer: WitnessAnswer
        do {
            answer = try await store.update(cp.origin) { held -> (result: WitnessAnswer?, store: WitnessStore.Held?) in
                let heldSize = held?.size ?? 0
                guard request.oldSize == heldSize else { return (.conflict(held: heldSize), nil) }
                // The tree of size 0 has one root, SHA-256 of nothing: a checkpoint of size 0 with
                // another is the empty size with another root (as for any size held).
                if cp.size == 0, cp.root != MerkleTree.emptyRoot {
                    return (.text(422, "a checkpoint of size 0 has another root hash than the empty tree's"), nil)
                }
                if let held, held.size == cp.size {
                    guard held.root == cp.root, request.proof.isEmpty else {
                        return (.text(422, "the checkpoint has the held size with another root hash"), nil)
                    }
                    return (nil, nil)
                }
                if let held, held.size > 0 {
                    guard MerkleTree.verifyConsistency(oldSize: held.size, oldRoot: held.root, newSize: cp.size,
                                                       newRoot: cp.root, proof: request.proof) else {
                        return (.text(422, "the consistency proof does not verify"), nil)
                    }
                } else if !request.proof.isEmpty {
                    return (.text(422, "a consistency proof came with old 0"), nil)
                }
                return (nil, WitnessStore.Held(size: cp.size, root: cp.root))
            } ?? .init(status: 200, contentType: "text/plain; charset=utf-8",
                       body: try cosigner.cosign(text: request.note.text, time: now()))
        } catch {
            logger.error("the witness store failed", metadata: ["error": "\(error)"])
            return .text(500, "the witness store failed")
        }
        if answer.status == 422 {
            logger.warning("refused an inconsistent checkpoint", metadata: ["origin": "\(cp.origin)", "size": "\(cp.size)"])
        }
        return answer
    }
}
