import AuthLedgerCore

extension Ledger {
    /// The `devices` answer (reference 3.1) for `user` under `o`; a user with no events has
    /// no devices. Throws `invalid_event` for an invalid user key, or a storage error.
    public func devices(of user: String, _ o: QueryOptions) throws -> DeviceList {
        try EventDecoder.checkUser(user)
        let (s, pos) = try state(of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
        return DeviceList(s, position: pos, options: o)
    }

    /// The `cooling` answer (reference 3.2) for `user` under `o`.
    /// Throws `invalid_event` for an invalid user key, or a storage error.
    public func cooling(of user: String, _ o: QueryOptions) throws -> CoolingAnswer {
        try EventDecoder.checkUser(user)
        let (s, _) = try state(of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
        return CoolingAnswer(s, options: o)
    }

    /// The `pending` answer (reference 3.3) for `user` under `o`: the challenges pending at
    /// `o.asOf`, ordered by `issuedAt`, then id.
    /// Throws `invalid_event` for an invalid user key, or a storage error.
    public func pending(of user: String, _ o: QueryOptions) throws -> [PendingChallenge] {
        try EventDecoder.checkUser(user)
        let (s, _) = try state(of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
        return Views.pendingChallenges(s, asOf: o.asOf).map { PendingChallenge($0, erased: s.erased) }
    }

    /// The `challenge` answer (reference 3.4) for challenge `id` of `user` under `o`, the
    /// requester's view with ``/AuthLedgerCore/QueryOptions/asRequester``. Throws
    /// `challenge_not_found` for an unknown challenge, `invalid_event` for an invalid user
    /// key, `tampered` for an undecodable stored record.
    public func challenge(_ id: String, of user: String, _ o: QueryOptions) throws -> ChallengeView {
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
        return ChallengeView(c.0, options: o, erased: c.1)
    }

    // The answers as the JSON documents the CLI and the HTTP service print (the same
    // members, in the reference's order).

    package func devices(_ user: String, _ o: QueryOptions) throws -> JSON { try devices(of: user, o).json }
    package func cooling(_ user: String, _ o: QueryOptions) throws -> JSON { try cooling(of: user, o).json }
    package func pending(_ user: String, _ o: QueryOptions) throws -> JSON { .array(try pending(of: user, o).map(\.json)) }
    package func challenge(_ user: String, _ id: String, _ o: QueryOptions) throws -> JSON { try challenge(id, of: user, o).json }

    /// The user's events with `seq <= position` and `at <= asOf`, in order.
    public func history(_ user: String, _ o: QueryOptions) throws -> [RecordedEvent] {
        try history(user, o, page: HistoryPage())
    }
}
