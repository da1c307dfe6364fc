import AuthLedgerCore
/// The split of a user's state between the maintained state and the record indexes.
///
/// `evolve` reads and changes challenge, OTP and grant records only by the ids its event
/// names (`challengeId`, `otpId`, `grantId`) — and the OTP that a new `otp.issued`
/// supersedes, which it does not touch. So a state that holds only the *live* records
/// (unresolved challenges, which `pending` lists and the sweeper expires; the latest OTP,
/// the only one that can be verified or failed) plus the records the event names, loaded
/// from their index, folds every event exactly as the full state does. What it folds is
/// written back to the index in the same transaction, and what is no longer live leaves
/// the state: its size follows the user's open business, not the user's past.
extension UserState {
    /// The records an event may read or change, by kind and id.
    static func recordIds(of event: Event) -> [(RecordKind, String)] {
        var out: [(RecordKind, String)] = []
        if let c = event.data.string(.challengeId) { out.append((.challenge, c)) }
        if let o = event.data.string(.otpId) { out.append((.otp, o)) }
        if let g = event.data.string(.grantId) { out.append((.grant, g)) }
        if event.type == .verificationRequested, let h = event.data.string(.linkHash) { out.append((.link, h)) }
        return out
    }

    func hasRecord(_ kind: RecordKind, _ id: String) -> Bool {
        switch kind {
        case .challenge: challenges[id] != nil
        case .otp: otps[id] != nil
        case .grant: grants[id] != nil
        case .link: links[id] != nil
        }
    }

    /// Puts a record read from its index back into the state.
    mutating func load(_ kind: RecordKind, _ bytes: [UInt8]) throws {
        switch kind {
        case .challenge: let c = try RecordCodec.decodeChallenge(bytes); challenges[c.challengeId] = c
        case .otp: let o = try RecordCodec.decodeOTP(bytes); otps[o.otpId] = o
        case .grant: let g = try RecordCodec.decodeGrant(bytes); grants[g.grantId] = g
        case .link:
            // An entry of any user: a link hash is never issued twice (`invalid_event`).
            let l = try LinkRecordCodec.decode(bytes)
            links[l.linkHash] = l.verificationId
        }
    }

    /// The stored bytes of a record the state holds.
    func encodedRecord(_ kind: RecordKind, _ id: String) -> [UInt8]? {
        switch kind {
        case .challenge: challenges[id].map(RecordCodec.encode)
        case .otp: otps[id].map(RecordCodec.encode)
        case .grant: grants[id].map(RecordCodec.encode)
        case .link: links[id].map { LinkRecordCodec.encode(user: user, linkHash: id, verificationId: $0) }
        }
    }

    /// Whether the maintained state keeps the record (see the type's comment).
    func isLive(_ kind: RecordKind, _ id: String) -> Bool {
        switch kind {
        case .challenge: challenges[id]?.resolution == .pending
        case .otp: id == latestOtpId
        case .grant: false
        case .link: isLiveLink(id)
        }
    }

    /// Drops the given records from the state where they are no longer live.
    mutating func evict(_ ids: [(RecordKind, String)]) {
        for (kind, id) in ids where !isLive(kind, id) {
            switch kind {
            case .challenge: challenges[id] = nil
            case .otp: otps[id] = nil
            case .grant: grants[id] = nil
            case .link: links[id] = nil
            }
        }
    }

    /// The state as it is maintained: live records only.
    func compacted() -> UserState {
        var s = self
        s.challenges = s.challenges.filter { $0.value.resolution == .pending }
        s.otps = s.otps.filter { $0.key == latestOtpId }
        s.grants = [:]
        s.links = s.links.filter { s.isLiveLink($0.key) }
        return s
    }

    /// Every record of the state with its stored bytes (a full state: replay, verify).
    func encodedRecords() -> [(RecordKind, String, [UInt8])] {
        challenges.values.map { (.challenge, $0.challengeId, RecordCodec.encode($0)) }
            + otps.values.map { (.otp, $0.otpId, RecordCodec.encode($0)) }
            + grants.values.map { (.grant, $0.grantId, RecordCodec.encode($0)) }
            + links.map { (.link, $0.key, LinkRecordCodec.encode(user: user, linkHash: $0.key, verificationId: $0.value)) }
    }
}
