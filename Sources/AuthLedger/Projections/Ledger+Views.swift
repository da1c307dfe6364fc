import AuthLedgerCore

extension Ledger {
    /// The `devices` answer (reference 3.1) for `user` under `o`; a user with no events has
    /// no devices. Throws `invalid_event` for an invalid user key, or a storage error.
    public func devices(of user: String, _ o: QueryOptions) async throws -> DeviceList {
        try await readView(user, o) { try Ledger.devices($0, user, o) }
    }

    /// The `cooling` answer (reference 3.2) for `user` under `o`.
    /// Throws `invalid_event` for an invalid user key, or a storage error.
    public func cooling(of user: String, _ o: QueryOptions) async throws -> CoolingAnswer {
        try await readView(user, o) { try Ledger.cooling($0, user, o) }
    }

    /// The `pending` answer (reference 3.3) for `user` under `o`: the challenges pending at
    /// `o.asOf`, ordered by `issuedAt`, then id.
    /// Throws `invalid_event` for an invalid user key, or a storage error.
    public func pending(of user: String, _ o: QueryOptions) async throws -> [PendingChallenge] {
        try await readView(user, o) { try Ledger.pending($0, user, o) }
    }

    /// The `challenge` answer (reference 3.4) for challenge `id` of `user` under `o`, the
    /// requester's view with ``/AuthLedgerCore/QueryOptions/asRequester``. Throws
    /// `challenge_not_found` for an unknown challenge, `invalid_event` for an invalid user
    /// key, `tampered` for an undecodable stored record.
    public func challenge(_ id: String, of user: String, _ o: QueryOptions) async throws -> ChallengeView {
        var also = ReadLoad()
        also.records = [(.challenge, user, id)]
        return try await readView(user, o, also: also) { try Ledger.challenge($0, id, user, o) }
    }

    /// The user's events with `seq <= position` and `at <= asOf`, in order.
    public func history(_ user: String, _ o: QueryOptions) async throws -> [RecordedEvent] {
        try await history(user, o, page: HistoryPage())
    }

    /// A read of a view of `user` under `o` (see `readState`).
    func readView<T: Sendable>(_ user: String, _ o: QueryOptions, also: ReadLoad = ReadLoad(),
                               _ body: (any StorageReader) throws -> T) async throws -> T {
        try await readState(user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch, also: also, body)
    }

    // MARK: Inside one read

    /// The user's state for a view: the key checked, the state as `state(of:…)` answers it.
    static func viewState(_ r: any StorageReader, _ user: String, _ o: QueryOptions) throws -> (state: UserState, position: UInt64) {
        try EventDecoder.checkUser(user)
        return try compactedState(r, of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
    }

    static func devices(_ r: any StorageReader, _ user: String, _ o: QueryOptions) throws -> DeviceList {
        let (s, pos) = try viewState(r, user, o)
        return DeviceList(s, position: pos, options: o)
    }

    static func cooling(_ r: any StorageReader, _ user: String, _ o: QueryOptions) throws -> CoolingAnswer {
        CoolingAnswer(try viewState(r, user, o).state, options: o)
    }

    static func pending(_ r: any StorageReader, _ user: String, _ o: QueryOptions) throws -> [PendingChallenge] {
        let s = try viewState(r, user, o).state
        return Views.pendingChallenges(s, asOf: o.asOf).map { PendingChallenge($0, erased: s.erased) }
    }

    static func challenge(_ r: any StorageReader, _ id: String, _ user: String, _ o: QueryOptions) throws -> ChallengeView {
        try EventDecoder.checkUser(user)
        // A settled challenge is not in the maintained state: its index has it.
        let (s, _, maintained) = try Ledger.state(r, of: user, position: o.position, asOf: o.asOf, fromScratch: o.fromScratch)
        if let c = s.challenges[id] { return ChallengeView(c, options: o, erased: s.erased) }
        guard maintained, let bytes = try r.record(.challenge, user: user, id: id) else {
            throw LedgerError(.challengeNotFound, "no challenge \(id) for user \(user)", field: "challengeId")
        }
        let c: ChallengeRecord
        do { c = try RecordCodec.decodeChallenge(bytes) } catch {
            throw LedgerError(.tampered, "a stored challenge record of \(user) is not decodable")
        }
        return ChallengeView(c, options: o, erased: s.erased)
    }
}
