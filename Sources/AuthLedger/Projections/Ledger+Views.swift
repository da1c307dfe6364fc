import AuthLedgerCore
extension Ledger {
    /// The `devices` answer (SPEC 3.1) for `user` under `o`; a user with no events has no devices.
    /// Throws `invalid_event` for an invalid user key, or a storage error.
    public func devices(_ user: String, _ o: QueryOptions) throws -> JSON {
        try EventDecoder.checkUser(user)
        let (s, pos) = try state(of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
        return Views.devices(s, position: pos, options: o)
    }

    /// The `cooling` answer (SPEC 3.2) for `user` under `o`.
    /// Throws `invalid_event` for an invalid user key, or a storage error.
    public func cooling(_ user: String, _ o: QueryOptions) throws -> JSON {
        try EventDecoder.checkUser(user)
        let (s, pos) = try state(of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
        return Views.coolingAnswer(s, position: pos, options: o)
    }

    /// The `pending` answer (SPEC 3.3) for `user` under `o`.
    /// Throws `invalid_event` for an invalid user key, or a storage error.
    public func pending(_ user: String, _ o: QueryOptions) throws -> JSON {
        try EventDecoder.checkUser(user)
        let (s, _) = try state(of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
        return Views.pending(s, options: o)
    }

    /// The `challenge` answer (SPEC 3.4) for challenge `id` of `user` under `o`, the requester's view with
    /// ``/AuthLedgerCore/QueryOptions/asRequester``. Throws `challenge_not_found` for an unknown challenge, `invalid_event`
    /// for an invalid user key, `tampered` for an undecodable stored record.
    public func challenge(_ user: String, _ id: String, _ o: QueryOptions) throws -> JSON {
        try EventDecoder.checkUser(user)
        // A settled challenge is not in the maintained state: its index has it.
        let found = try storage.read { r -> (ChallengeRecord, Bool)? in
            let (s, _, maintained) = try Ledger.state(r, of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
            if let c = s.challenges[id] { return (c, s.erased) }
            guard maintained, let bytes = try r.record(.challenge, user: user, id: id) else { return nil }
            do { return (try RecordCodec.decodeChallenge(bytes), s.erased) } catch {
                throw LedgerError(.tampered, "a stored challenge record of \(user) is not decodable")
            }
        }
        guard let c = found else { throw LedgerError(.challengeNotFound, "no challenge \(id) for user \(user)", field: "challengeId") }
        return Views.challenge(c.0, options: o, erased: c.1)
    }

    /// The user's events with `seq <= position` and `at <= asOf`, in order.
    public func history(_ user: String, _ o: QueryOptions) throws -> [RecordedEvent] {
        try history(user, o, page: HistoryPage())
    }
}
