import AuthLedgerCore

/// Sealing: an event's personal values get their salted commitments (SPEC 1.5).
extension AppendSession {
    /// Seals `event`'s personal values now, or returns true when the hashing thread draws
    /// their fresh salts (`HashPipeline.Job.seal`); refuses commitments a ledger without
    /// sealing does not take.
    func seal(_ event: inout Event, _ input: EventInput) throws -> Bool {
        if switches.sealPersonalData.load(ordering: .relaxed) {
            if pipelining && input.disclosures == nil && input.claims.isEmpty { return true }
            try PersonalData.seal(&event, disclosures: input.disclosures)
        } else if input.disclosures != nil || event.personal != nil {
            throw LedgerError.invalid("this ledger does not take commitments", field: "disclosures")
        }
        return false
    }
}
