import AuthLedgerCore

/// Erasure of a user's personal values (SPEC 1.5).
extension AppendSession {
    /// Destroys the personal values of `user`'s events before `seq` (SPEC 1.5), and the
    /// copies kept in the challenge and OTP indexes (contexts, targets).
    func erase(_ user: String, before seq: UInt64) throws {
        // The challenge and OTP records those events issued (each names its own once).
        let issued = try w.erasePersonalValues(user: user, before: seq).compactMap { s -> (RecordKind, String)? in
            let e = try w.withEventBytes(s) { b -> Event? in try b.map { try EventCodec.decode($0, seq: s).event } }
            switch e?.type {
            case .challengeIssued?: return e!.data.string(.challengeId).map { (.challenge, $0) }
            case .otpIssued?: return e!.data.string(.otpId).map { (.otp, $0) }
            default: return nil
            }
        }
        for (kind, id) in issued {
            guard let bytes = try w.record(kind, user: user, id: id) else { continue }
            let scrubbed = kind == .challenge
                ? RecordCodec.encode(PersonalData.scrubbed(try RecordCodec.decodeChallenge(bytes)))
                : RecordCodec.encode(PersonalData.scrubbed(try RecordCodec.decodeOTP(bytes)))
            try w.putRecord(kind, user: user, id: id, scrubbed)
        }
    }
}
