import AuthLedger
import AuthLedgerWitness

/// What witnesses have cosigned of a log, from the witnessing records the server keeps in
/// the store (`serve --witness-policy`).
public enum WitnessedSize {
    /// The largest tree size of a checkpoint that carries a witness cosignature (the
    /// latest checkpoint sent to the witnesses, or the one that met the quorum); nil when
    /// nothing was cosigned. A log restored to a smaller size, and then grown, is refused
    /// by those witnesses: their cosignature binds them to the lost events.
    public static func of(_ ledger: Ledger) async throws -> UInt64? {
        var largest: UInt64?
        for key in [WitnessRecords.log.latest, WitnessRecords.log.quorum] {
            // The log's own signature comes first; any further line is a witness's.
            guard let note = try await WitnessRecords.log.note(ledger, key), note.signatures.count > 1,
                  let size = try? Checkpoint(text: note.text).size else { continue }
            largest = max(largest ?? 0, size)
        }
        return largest
    }

    /// The index log's checkpoint of `size` entries with the cosignatures gathered for it
    /// (the latest sent to the witnesses, else the quorum one); nil when neither is of that
    /// size (or nothing was sent to witnesses). A user proof at that size carries it.
    public static func usersCheckpoint(_ ledger: Ledger, size: UInt64) async throws -> String? {
        for key in [WitnessRecords.users.latest, WitnessRecords.users.quorum] {
            if let note = try await ledger.metaRecord(key), let parsed = try? SignedNote(parsing: note),
               (try? Checkpoint(text: parsed.text))?.size == size {
                return String(decoding: note, as: UTF8.self)
            }
        }
        return nil
    }
}
