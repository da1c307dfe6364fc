/// What an auditor checks of a cosigned checkpoint: the log's signature and the quorum
/// of a C2SP `tlog-policy` met by cosignatures that verify.
public enum CheckpointVerification {
    /// A sentence naming the size and the witnesses that cosigned, or why the note fails.
    public static func check(_ note: [UInt8], logKey: NoteVerifierKey, policy: WitnessPolicy) -> Result<String, NoteError> {
        let parsed: SignedNote, cp: Checkpoint
        do {
            parsed = try SignedNote(parsing: note)
            cp = try Checkpoint(text: parsed.text)
        } catch let e as NoteError { return .failure(e) } catch { return .failure(NoteError("\(error)")) }
        guard logKey.type == NoteVerifierKey.ed25519 else { return .failure(NoteError("the log key is not an Ed25519 note key")) }
        guard cp.origin == logKey.name else {
            return .failure(NoteError("the checkpoint's origin '\(cp.origin)' is not the key's name '\(logKey.name)'"))
        }
        switch parsed.verified(by: logKey) {
        case nil: return .failure(NoteError("no signature by the log's key"))
        case false?: return .failure(NoteError("the log's signature does not verify"))
        case true?: break
        }
        let cosigners = policy.cosigners(of: parsed)
        let names = cosigners.sorted().map { policy.witnesses[$0].label }
        guard policy.isMet(byWitnessesAt: cosigners) else {
            return .failure(NoteError("the quorum is not met (valid cosignatures from: \(names.isEmpty ? "none" : names.joined(separator: ", ")))"))
        }
        return .success("\(cp.origin) size \(cp.size): log signature verifies; quorum met by \(names.isEmpty ? "no witness needed" : names.joined(separator: ", "))")
    }
}
