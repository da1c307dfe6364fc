import AuthLedger
import AuthLedgerCore
import Foundation

/// Checks a user proof (section 14 of the reference: `GET /v1/users/{u}/proof`,
/// `authledger prove-user --json`) with nothing but the log's verifier key: the prefix
/// proof folds from the user's value (or from nothing, for a user without events) to the
/// index root; the index log's entry `u64be(S) ‖ R_S ‖ I_S` — `R_S` from the log's
/// checkpoint at `S`, signed by the log's key — is included in the index log's
/// checkpoint, signed by the same key under `<origin>/users` — and, given a witness policy,
/// cosigned by witnesses meeting its quorum.
public enum UserProofVerification {
    /// The index log's verifier key: the log's key under the name `<name>/users`.
    public static func usersKey(_ logKey: NoteVerifierKey) throws -> NoteVerifierKey {
        try NoteVerifierKey(name: logKey.name + "/users", type: logKey.type, publicKey: logKey.publicKey)
    }

    /// A summary of what holds, or why the proof does not.
    public static func check(_ proof: JSON, logKey: NoteVerifierKey, policy: WitnessPolicy? = nil) -> Result<String, NoteError> {
        do { return .success(try checked(proof, logKey: logKey, policy: policy)) } catch let e as NoteError { return .failure(e) } catch {
            return .failure(NoteError("\(error)"))
        }
    }

    static func hash(_ j: JSON?, _ field: String) throws -> Hash32 {
        guard let s = j?.stringValue, let d = Data(base64Encoded: s), d.count == 32 else {
            throw NoteError("\(field) is not base64 of 32 bytes")
        }
        return Hash32(bytes: Array(d))
    }

    static func number(_ j: JSON?, _ field: String) throws -> UInt64 {
        guard let v = j?.intValue, v >= 0 else { throw NoteError("\(field) is not a non-negative integer") }
        return UInt64(v)
    }

    /// The checkpoint `field` of the proof, its signature by `key` checked.
    static func checkpoint(_ j: JSON?, _ field: String, key: NoteVerifierKey) throws -> Checkpoint {
        guard let text = j?.stringValue else { throw NoteError("\(field) is missing") }
        let note = try SignedNote(parsing: Array(text.utf8))
        guard note.verified(by: key) == true else { throw NoteError("\(field) is not signed by \(key.name)") }
        let c = try Checkpoint(text: note.text)
        guard c.origin == key.name else { throw NoteError("\(field) is for origin \(c.origin), not \(key.name)") }
        return c
    }

    static func checked(_ p: JSON, logKey: NoteVerifierKey, policy: WitnessPolicy?) throws -> String {
        guard let user = p["user"]?.stringValue else { throw NoteError("user is missing") }
        let size = try number(p["size"], "size"), count = try number(p["count"], "count"), last = try number(p["last"], "last")
        let streamHash = try hash(p["streamHash"], "streamHash"), indexRoot = try hash(p["indexRoot"], "indexRoot")
        guard let siblings = p["proof"]?["siblings"]?.arrayValue, siblings.count <= 256 else { throw NoteError("proof.siblings is missing") }
        let terminal: UserIndexProof.Terminal
        switch p["proof"]?["terminal"]?["type"]?.stringValue {
        case "leaf"?: terminal = .leaf(key: try hash(p["proof"]?["terminal"]?["key"], "proof.terminal.key"),
                                       commitment: try hash(p["proof"]?["terminal"]?["commitment"], "proof.terminal.commitment"))
        case "empty"?: terminal = .empty
        default: throw NoteError("proof.terminal.type is neither leaf nor empty")
        }
        let prefix = UserIndexProof(siblings: try siblings.enumerated().map { try hash($0.element, "proof.siblings[\($0.offset)]") }, terminal: terminal)
        let key = UserIndex.key(user)
        let value = count == 0 ? nil : UserIndex.commitment(count: count, streamHash: streamHash, last: last)
        guard prefix.verifies(key: key, commitment: value, root: indexRoot) else {
            throw NoteError(count == 0 ? "the proof does not show \(user) absent from the index" : "the proof does not show \(user)'s \(count) events in the index")
        }
        let log = try checkpoint(p["checkpoint"], "checkpoint", key: logKey)
        guard log.size == size else { throw NoteError("checkpoint is for size \(log.size), not \(size)") }
        let users = try checkpoint(p["usersCheckpoint"], "usersCheckpoint", key: try usersKey(logKey))
        let index = try number(p["entry"]?["index"], "entry.index"), treeSize = try number(p["entry"]?["treeSize"], "entry.treeSize")
        guard treeSize == users.size else { throw NoteError("entry.treeSize \(treeSize) is not usersCheckpoint's size \(users.size)") }
        guard let path = p["entry"]?["proof"]?.arrayValue else { throw NoteError("entry.proof is missing") }
        let entry = UserIndexLog.entry(size: size, logRoot: log.root, indexRoot: indexRoot)
        guard MerkleTree.verifyInclusion(leafHash: MerkleTree.leafHash(entry), index: index, size: treeSize,
                                         proof: try path.enumerated().map { try hash($0.element, "entry.proof[\($0.offset)]") }, root: users.root) else {
            throw NoteError("the index log's entry \(index) for size \(size) is not in usersCheckpoint")
        }
        var witnessed = ""
        if let policy {
            // The signature was checked above; what is left is the quorum of its cosignatures.
            let cosigned = CheckpointVerification.check(Array((p["usersCheckpoint"]?.stringValue ?? "").utf8), logKey: try usersKey(logKey), policy: policy)
            switch cosigned {
            case .failure(let e): throw NoteError("usersCheckpoint: \(e.message)")
            case .success(let summary): witnessed = "; \(summary)"
            }
        }
        return (count == 0
            ? "\(user) has no events in the log of \(size) (index log entry \(index) of \(treeSize))"
            : "\(user) has exactly \(count) events in the log of \(size), the newest at seq \(last) (index log entry \(index) of \(treeSize))") + witnessed
    }
}
